/* The submission process's CUDA allocator: every PyTorch allocation is carved out of one arena of device memory
 * that the trusted evaluator maps too, so the evaluator reads the output the submission returns where the
 * submission's kernels wrote it (no copy that the submission's own process makes or could skip).
 *
 * PyTorch loads this through torch.cuda.memory.CUDAPluggableAllocator(path, "kc_malloc", "kc_free") before its
 * CUDA allocator is first used; kc_arena_init() hands it the arena. First fit over a free list kept in address
 * order; neighbouring free blocks are merged on free. Blocks are 512-byte aligned. When the arena cannot hold a
 * request, kc_malloc throws (PyTorch does not check its pluggable allocator's result for NULL, so NULL would give
 * a tensor at address 0); PyTorch turns the exception into a RuntimeError that says "out of memory".
 *
 * C++ only for that exception; the interface is plain C (extern "C").
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cstdio>
#include <stdexcept>

#define KC_ALIGN 512u

typedef struct Block {
    uintptr_t start;
    size_t size;
    struct Block *next;
} Block;

static pthread_mutex_t kc_lock = PTHREAD_MUTEX_INITIALIZER;
static Block *kc_free_list = NULL;
static uintptr_t kc_base = 0;
static size_t kc_size = 0, kc_in_use = 0, kc_peak = 0;

static size_t kc_round(size_t n) { return (n + KC_ALIGN - 1) / KC_ALIGN * KC_ALIGN; }

extern "C" {

int kc_arena_init(uintptr_t base, size_t size) {
    int rc = -1;
    pthread_mutex_lock(&kc_lock);
    if (kc_base == 0 && base != 0 && size >= KC_ALIGN) {
        Block *b = static_cast<Block *>(malloc(sizeof *b));
        if (b != NULL) {
            b->start = base;
            b->size = size / KC_ALIGN * KC_ALIGN;
            b->next = NULL;
            kc_free_list = b;
            kc_base = base;
            kc_size = b->size;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&kc_lock);
    return rc;
}

void *kc_malloc(ssize_t size, int device, void *stream) {
    (void)device;
    (void)stream;
    if (size < 0) throw std::runtime_error("CUDA out of memory: a negative allocation size");
    size_t need = kc_round(size > 0 ? (size_t)size : 1);
    void *out = NULL;
    pthread_mutex_lock(&kc_lock);
    Block **link = &kc_free_list;
    for (Block *b = kc_free_list; b != NULL; link = &b->next, b = b->next) {
        if (b->size < need) continue;
        out = (void *)b->start;
        if (b->size == need) {
            *link = b->next;
            free(b);
        } else {
            b->start += need;
            b->size -= need;
        }
        kc_in_use += need;
        if (kc_in_use > kc_peak) kc_peak = kc_in_use;
        break;
    }
    size_t in_use = kc_in_use;
    pthread_mutex_unlock(&kc_lock);
    if (out == NULL) {
        char text[256];
        snprintf(text, sizeof text,
                 "CUDA out of memory: tried to allocate %zu bytes; the submission's GPU memory of %zu bytes has "
                 "%zu bytes in use",
                 need, kc_size, in_use);
        throw std::runtime_error(text);
    }
    return out;
}

void kc_free(void *ptr, ssize_t size, int device, void *stream) {
    (void)device;
    (void)stream;
    uintptr_t start = (uintptr_t)ptr;
    if (ptr == NULL || start < kc_base || start >= kc_base + kc_size) return;
    size_t len = kc_round(size > 0 ? (size_t)size : 1);
    pthread_mutex_lock(&kc_lock);
    kc_in_use -= len < kc_in_use ? len : kc_in_use;
    Block *prev = NULL, *cur = kc_free_list;
    while (cur != NULL && cur->start < start) {
        prev = cur;
        cur = cur->next;
    }
    if (prev != NULL && prev->start + prev->size == start) {
        prev->size += len;
        if (cur != NULL && prev->start + prev->size == cur->start) {
            prev->size += cur->size;
            prev->next = cur->next;
            free(cur);
        }
    } else if (cur != NULL && start + len == cur->start) {
        cur->start = start;
        cur->size += len;
    } else {
        Block *b = static_cast<Block *>(malloc(sizeof *b));
        if (b != NULL) { /* without a node the block is lost to the arena, never handed out twice */
            b->start = start;
            b->size = len;
            b->next = cur;
            if (prev != NULL) prev->next = b;
            else kc_free_list = b;
        }
    }
    pthread_mutex_unlock(&kc_lock);
}

size_t kc_arena_peak(void) { return kc_peak; }

}  // extern "C"
