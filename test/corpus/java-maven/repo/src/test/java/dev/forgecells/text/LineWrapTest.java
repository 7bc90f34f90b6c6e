package dev.forgecells.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class LineWrapTest {
    @Test
    void shortTextStaysOnOneLine() {
        assertEquals(List.of("a short note"), LineWrap.wrap("a short note", 40));
    }

    @Test
    void wordsThatFillTheWidthExactlyShareALine() {
        assertEquals(List.of("aaa bbb", "ccc"), LineWrap.wrap("aaa bbb ccc", 7));
    }

    @Test
    void collapsesWhitespaceBetweenWords() {
        assertEquals(List.of("one two", "three"), LineWrap.wrap("one   two\n\tthree", 8));
    }

    @Test
    void longWordGetsItsOwnLine() {
        assertEquals(List.of("a", "incomprehensible", "b"), LineWrap.wrap("a incomprehensible b", 5));
    }

    @Test
    void blankTextHasNoLines() {
        assertEquals(List.of(), LineWrap.wrap("   ", 10));
    }

    @Test
    void rejectsZeroWidth() {
        assertThrows(IllegalArgumentException.class, () -> LineWrap.wrap("x", 0));
    }
}
