package dev.forgecells.text;

import java.util.ArrayList;
import java.util.List;

/** Greedy word wrapping: each line holds as many whole words as fit in the width. */
public final class LineWrap {
    private LineWrap() {}

    /**
     * Wraps {@code text} into lines of at most {@code width} characters. Words longer than the
     * width get a line of their own. Runs of whitespace between words count as one space.
     */
    public static List<String> wrap(String text, int width) {
        if (width < 1) {
            throw new IllegalArgumentException("width must be at least 1, got " + width);
        }
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String word : text.trim().split("\\s+")) {
            if (word.isEmpty()) {
                continue;
            }
            if (line.length() == 0) {
                line.append(word);
            } else if (line.length() + 1 + word.length() < width) {
                line.append(' ').append(word);
            } else {
                lines.add(line.toString());
                line.setLength(0);
                line.append(word);
            }
        }
        if (line.length() > 0) {
            lines.add(line.toString());
        }
        return lines;
    }
}
