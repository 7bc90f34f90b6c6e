#include <stdio.h>
int clamp(int value, int low, int high);

static int failures = 0, passes = 0;
static void check(const char *name, int got, int want) {
    if (got != want) { printf("FAIL %s: got %d, want %d\n", name, got, want); failures++; }
    else { printf("ok %s\n", name); passes++; }
}

int main(void) {
    check("below", clamp(-5, 0, 10), 0);
    check("inside", clamp(7, 0, 10), 7);
    check("above", clamp(15, 0, 10), 10);
    printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
