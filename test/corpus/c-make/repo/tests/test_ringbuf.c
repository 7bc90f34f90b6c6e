#include <stdio.h>
#include "ringbuf.h"

static int failures = 0;
static int passes = 0;

#define CHECK(name, cond) do { \
    if (cond) { passes++; printf("ok %d - %s\n", passes + failures, name); } \
    else { failures++; printf("not ok %d - %s\n", passes + failures, name); } \
} while (0)

static void test_fifo_order(void) {
    ringbuf rb; int v = 0, ok = 1;
    ringbuf_init(&rb, 4);
    ringbuf_push(&rb, 1); ringbuf_push(&rb, 2); ringbuf_push(&rb, 3);
    ok &= ringbuf_pop(&rb, &v) && v == 1;
    ok &= ringbuf_pop(&rb, &v) && v == 2;
    CHECK("fifo order", ok);
    ringbuf_free(&rb);
}

static void test_empty_pop(void) {
    ringbuf rb; int v = 42;
    ringbuf_init(&rb, 2);
    CHECK("pop on empty returns 0", ringbuf_pop(&rb, &v) == 0 && v == 42);
    ringbuf_free(&rb);
}

static void test_wraps_around(void) {
    ringbuf rb; int v = 0, ok = 1;
    ringbuf_init(&rb, 3);
    for (int i = 1; i <= 3; i++) ringbuf_push(&rb, i);
    ok &= ringbuf_pop(&rb, &v) && v == 1;
    ringbuf_push(&rb, 4);
    for (int want = 2; want <= 4; want++) ok &= ringbuf_pop(&rb, &v) && v == want;
    CHECK("wraps around", ok && ringbuf_count(&rb) == 0);
    ringbuf_free(&rb);
}

static void test_full_drops_oldest(void) {
    ringbuf rb; int v = 0, ok = 1;
    ringbuf_init(&rb, 3);
    for (int i = 1; i <= 5; i++) ringbuf_push(&rb, i);
    ok &= ringbuf_count(&rb) == 3;
    for (int want = 3; want <= 5; want++) ok &= ringbuf_pop(&rb, &v) && v == want;
    CHECK("full buffer drops the oldest", ok);
    ringbuf_free(&rb);
}

int main(void) {
    printf("1..4\n");
    test_fifo_order();
    test_empty_pop();
    test_wraps_around();
    test_full_drops_oldest();
    printf("%d passed, %d failed\n", passes, failures);
    return failures == 0 ? 0 : 1;
}
