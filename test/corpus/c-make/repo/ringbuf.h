#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>

/* A fixed-capacity FIFO of ints; the oldest value is dropped when a push finds it full. */
typedef struct {
    int *data;
    size_t capacity;
    size_t head; /* index of the oldest value */
    size_t count;
} ringbuf;

int ringbuf_init(ringbuf *rb, size_t capacity);
void ringbuf_free(ringbuf *rb);
void ringbuf_push(ringbuf *rb, int value);
/* Removes the oldest value into *out; returns 0 when empty. */
int ringbuf_pop(ringbuf *rb, int *out);
size_t ringbuf_count(const ringbuf *rb);

#endif
