//! retry's memory allocator: small pieces come from an arena in the program's own zeroed
//! data, handed out in order and never given back one by one, until it is full; large pieces,
//! and everything once the arena is full, from the C library's `malloc`.
//!
//! A run of `retry -- true` makes about 300 small allocations before its command starts,
//! nearly all of them clap's, and keeps most of them until it exits; through `malloc` they
//! cost more instructions than anything else the run did. From the arena a small piece is an
//! addition. Keeping them out of `malloc`'s heap helps the large pieces too: the one that
//! matters, clap's vector of the 68 flags' definitions (600 bytes each), then sits at the
//! top of the heap each time it doubles, where `realloc` grows it in place instead of copying
//! it and leaving the old block behind. The arena's size bounds what it can waste: a run that
//! lasts (`--forever`) soon fills it, and from then on allocates with `malloc` as any program
//! does.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The largest piece the arena serves.
const SMALL: usize = 4096;
/// The largest alignment the arena serves.
const ALIGN: usize = 64;

/// The arena's bytes, aligned for any piece it serves.
#[repr(C, align(64))]
struct Bytes<const N: usize>([u8; N]);

/// An allocator that serves small pieces of `N` bytes of its own in order, and the rest from
/// the system's.
pub struct Arena<const N: usize> {
    bytes: UnsafeCell<Bytes<N>>,
    /// The offset of the first byte not handed out.
    next: AtomicUsize,
}

// SAFETY: the bytes are only reached through the pieces handed out, and each piece is claimed
// by one atomic update of `next`, so no two live pieces overlap, whichever threads ask.
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Arena<N> {
    /// An empty arena: as a `static`, its bytes are zeroed data, which takes no room in the
    /// file and a page of memory only once a piece is written there.
    pub const fn new() -> Self {
        Arena {
            bytes: UnsafeCell::new(Bytes([0; N])),
            next: AtomicUsize::new(0),
        }
    }

    /// How many bytes have been handed out, or skipped for alignment.
    pub fn used(&self) -> usize {
        self.next.load(Ordering::Acquire)
    }

    fn base(&self) -> *mut u8 {
        self.bytes.get().cast()
    }

    /// The offset of `ptr` in the arena, if it is one of its pieces.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        (ptr as usize)
            .checked_sub(self.base() as usize)
            .filter(|offset| *offset < N)
    }

    /// The next `layout.size()` bytes at `layout.align()`, if the piece is small and the
    /// arena still has room for it.
    fn claim(&self, layout: Layout) -> Option<*mut u8> {
        if layout.size() > SMALL || layout.align() > ALIGN {
            return None;
        }
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            let start = next.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let end = start.checked_add(layout.size()).filter(|end| *end <= N)?;
            match self
                .next
                .compare_exchange_weak(next, end, Ordering::AcqRel, Ordering::Acquire)
            {
                // SAFETY: `start` is within the arena (`start <= end <= N`).
                Ok(_) => return Some(unsafe { self.base().add(start) }),
                Err(now) => next = now,
            }
        }
    }
}

// SAFETY: every piece is either claimed from the arena (disjoint, in bounds and aligned, see
// `claim`) or made by `System`, and each is given back to the one that made it; a piece of the
// arena is only served again after it was given back (the last one, by moving `next` back).
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.claim(layout) {
            Some(ptr) => ptr,
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires of it.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            // The last piece handed out is taken back; any other stays used until exit.
            Some(offset) => {
                let _ = self.next.compare_exchange(
                    offset + layout.size(),
                    offset,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            // SAFETY: a piece not of the arena was made by `System` with this layout.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(offset) = self.offset(ptr) else {
            // SAFETY: a piece not of the arena was made by `System` with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // The last piece grows or shrinks where it is, while it stays small.
        if new_size <= SMALL
            && offset + new_size <= N
            && self
                .next
                .compare_exchange(
                    offset + layout.size(),
                    offset + new_size,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: `GlobalAlloc::realloc` requires `new_size`, at `layout.align()`, to be a
        // valid layout's size.
        let grown = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid layout of non-zero size (larger than the old one's).
        let new = unsafe { self.alloc(grown) };
        if !new.is_null() {
            // SAFETY: the old piece has `layout.size()` bytes, the new one more, and they do
            // not overlap (the new one was claimed while the old one was still held).
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).expect("a valid layout")
    }

    #[test]
    fn small_pieces_are_aligned_disjoint_and_in_order_the_rest_the_systems() {
        let arena = Arena::<256>::new();
        // SAFETY: valid layouts; every piece is given back with its own layout.
        unsafe {
            let a = arena.alloc(layout(3, 1));
            let b = arena.alloc(layout(8, 8));
            assert!(arena.offset(a).is_some() && arena.offset(b).is_some());
            assert_eq!(b as usize % 8, 0);
            assert!(b as usize >= a as usize + 3);
            a.write_bytes(1, 3);
            b.write_bytes(2, 8);
            assert_eq!(*a.add(2), 1, "b did not overwrite a");
            // Too large a piece, too large an alignment, or no room left: the system's.
            let large = arena.alloc(layout(SMALL + 1, 8));
            assert!(arena.offset(large).is_none());
            large.write_bytes(3, SMALL + 1);
            let aligned = arena.alloc(layout(8, 4096));
            assert!(arena.offset(aligned).is_none());
            assert_eq!(aligned as usize % 4096, 0);
            let c = arena.alloc(layout(200, 8));
            assert!(arena.offset(c).is_some());
            let full = arena.alloc(layout(100, 8));
            assert!(
                arena.offset(full).is_none(),
                "only {} bytes left",
                256 - arena.used()
            );
            for (p, l) in [
                (full, layout(100, 8)),
                (c, layout(200, 8)),
                (aligned, layout(8, 4096)),
                (large, layout(SMALL + 1, 8)),
                (a, layout(3, 1)),
                (b, layout(8, 8)),
            ] {
                arena.dealloc(p, l);
            }
        }
    }

    #[test]
    fn the_last_piece_is_taken_back_and_grows_in_place_others_are_copied() {
        let arena = Arena::<1024>::new();
        // SAFETY: valid layouts; every piece is given back with its own layout.
        unsafe {
            let a = arena.alloc(layout(16, 8));
            a.write_bytes(7, 16);
            let used = arena.used();
            // The last piece grows where it is.
            let a2 = arena.realloc(a, layout(16, 8), 64);
            assert_eq!(a2, a);
            assert_eq!(arena.used(), used + 48);
            // With another piece after it, it can no longer grow in place, and is copied.
            let b = arena.alloc(layout(8, 8));
            let a3 = arena.realloc(a2, layout(64, 8), 100);
            assert_ne!(a3, a2);
            assert!(arena.offset(a3).is_some());
            assert_eq!(std::slice::from_raw_parts(a3, 16), &[7; 16]);
            // Grown past a small piece's size, it moves to the system, its bytes kept.
            let a4 = arena.realloc(a3, layout(100, 8), SMALL + 1);
            assert!(arena.offset(a4).is_none());
            assert_eq!(std::slice::from_raw_parts(a4, 16), &[7; 16]);
            arena.dealloc(a4, layout(SMALL + 1, 8));
            // The last piece given back is served again; one before it is not (b stays).
            let before = arena.used();
            let c = arena.alloc(layout(32, 8));
            assert_eq!(arena.used(), before.next_multiple_of(8) + 32);
            arena.dealloc(c, layout(32, 8));
            assert_eq!(arena.used(), before.next_multiple_of(8));
            assert_eq!(arena.alloc(layout(32, 8)), c);
            arena.dealloc(b, layout(8, 8));
            assert_eq!(arena.used(), before.next_multiple_of(8) + 32);
        }
    }

    #[test]
    fn threads_get_disjoint_pieces() {
        let arena = Arena::<{ 1 << 16 }>::new();
        let pieces: Vec<Vec<usize>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u8)
                .map(|t| {
                    let arena = &arena;
                    s.spawn(move || {
                        (0..200)
                            .map(|_| {
                                // SAFETY: a valid layout; the piece is written within its size.
                                unsafe {
                                    let p = arena.alloc(layout(24, 8));
                                    p.write_bytes(t, 24);
                                    p as usize
                                }
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("joined"))
                .collect()
        });
        let mut all: Vec<usize> = pieces.iter().flatten().copied().collect();
        all.sort_unstable();
        assert!(all.windows(2).all(|w| w[1] - w[0] >= 24), "pieces overlap");
        for (t, own) in pieces.iter().enumerate() {
            for p in own {
                // SAFETY: each piece is 24 bytes, written by its thread and by no other.
                let bytes = unsafe { std::slice::from_raw_parts(*p as *const u8, 24) };
                assert!(bytes.iter().all(|b| usize::from(*b) == t));
            }
        }
    }
}
