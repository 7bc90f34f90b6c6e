#include <stdlib.h>
#include "ringbuf.h"

int ringbuf_init(ringbuf *rb, size_t capacity) {
    rb->data = calloc(capacity, sizeof(int));
    rb->capacity = capacity;
    rb->head = 0;
    rb->count = 0;
    return rb->data != NULL && capacity > 0;
}

void ringbuf_free(ringbuf *rb) {
    free(rb->data);
    rb->data = NULL;
}

void ringbuf_push(ringbuf *rb, int value) {
    size_t tail = (rb->head + rb->count) % rb->capacity;
    rb->data[tail] = value;
    if (rb->count < rb->capacity) {
        rb->count++;
    }
}

int ringbuf_pop(ringbuf *rb, int *out) {
    if (rb->count == 0) return 0;
    *out = rb->data[rb->head];
    rb->head = (rb->head + 1) % rb->capacity;
    rb->count--;
    return 1;
}

size_t ringbuf_count(const ringbuf *rb) {
    return rb->count;
}
