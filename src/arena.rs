//! The module's allocator (not JSON, so not in the JSON layer: it serves the whole module, on
//! its own target only): during a `validate` call, blocks come from one fixed region by
//! moving a mark forward, and freeing one costs a counter decrement. An evaluation allocates a
//! few hundred small blocks (nodes, values, the answer) and frees all of them by the time the
//! waPC glue has handed the answer to the host; a general allocator keeps free lists that are
//! never needed (what that costs: docs/contributing.md).
//!
//! Memory is reused only when nothing taken from the region is still in use: the region starts
//! over from its beginning when its last live block is freed, never at a fixed point in time.
//! A block kept past the call (a static initialised during it) only keeps the region from
//! starting over; later blocks then come from the system allocator, as do blocks that do not
//! fit and blocks taken outside a call (the waPC glue's function table at start-up).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};
use std::ptr;

/// The region's size: the largest request the benchmarks evaluate fits in it with room to
/// spare.
pub const REGION: usize = 4 << 20;

#[repr(align(16))]
struct Region<const N: usize>(UnsafeCell<[u8; N]>);

/// A region of `N` bytes handed out front to back, with the count of blocks still in use.
pub struct Arena<const N: usize> {
    region: Region<N>,
    /// Bytes of the region handed out so far.
    mark: Cell<usize>,
    /// Blocks handed out and not yet freed.
    live: Cell<usize>,
    /// Whether blocks are handed out now (during a call).
    open: Cell<bool>,
}

// SAFETY: the cells are only touched from one thread: wasm32-wasip1 without the atomics feature
// has no threads, and the global below exists only there.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    pub const fn new() -> Self {
        Arena {
            region: Region(UnsafeCell::new([0; N])),
            mark: Cell::new(0),
            live: Cell::new(0),
            open: Cell::new(false),
        }
    }

    fn base(&self) -> usize {
        self.region.0.get() as usize
    }

    /// Whether `block` was handed out by this region.
    pub fn owns(&self, block: *const u8) -> bool {
        (block as usize).wrapping_sub(self.base()) < N
    }

    /// Runs `call` with the region handing out blocks.
    pub fn during<R>(&self, call: impl FnOnce() -> R) -> R {
        let was = self.open.replace(true);
        let result = call();
        self.open.set(was);
        result
    }

    /// A block for `layout` from the region; `None` outside a call, or when it does not fit.
    pub fn take(&self, layout: Layout) -> Option<*mut u8> {
        if !self.open.get() {
            return None;
        }
        let base = self.base();
        let start = (base + self.mark.get()).checked_next_multiple_of(layout.align())? - base;
        let end = start.checked_add(layout.size())?;
        if end > N {
            return None;
        }
        self.mark.set(end);
        self.live.set(self.live.get() + 1);
        // In bounds: start <= end <= N.
        Some(self.region.0.get().cast::<u8>().wrapping_add(start))
    }

    /// Frees a block this region handed out: the region starts over once none is in use.
    pub fn give_back(&self) {
        debug_assert!(self.live.get() > 0, "a region block freed twice");
        let live = self.live.get().saturating_sub(1);
        self.live.set(live);
        if live == 0 {
            self.mark.set(0);
        }
    }

    /// Resizes `block` where it is, when it is the last block handed out and the new size
    /// fits: a growing list or answer buffer is not copied each time it doubles.
    pub fn resize_in_place(&self, block: *mut u8, old: usize, new: usize) -> bool {
        let start = (block as usize).wrapping_sub(self.base());
        let last = start.checked_add(old) == Some(self.mark.get());
        match start.checked_add(new) {
            Some(end) if last && end <= N => {
                self.mark.set(end);
                true
            }
            _ => false,
        }
    }
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The region during calls, the system allocator for everything else.
pub struct Allocator<const N: usize> {
    pub arena: Arena<N>,
}

// SAFETY: a region block is aligned as its layout asks and lies within the region, which no
// other block overlaps until every block is freed; every other block is the system allocator's,
// and goes back to it.
unsafe impl<const N: usize> GlobalAlloc for Allocator<N> {
    // SAFETY: callers keep `GlobalAlloc`'s contract; the impl's comment above says why it holds.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.arena.take(layout) {
            Some(block) => block,
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires it.
            None => unsafe { System.alloc(layout) },
        }
    }

    // SAFETY: callers keep `GlobalAlloc`'s contract; the impl's comment above says why it holds.
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if self.arena.owns(block) {
            self.arena.give_back();
        } else {
            // SAFETY: not a region block, so the system allocator's, with this layout.
            unsafe { System.dealloc(block, layout) };
        }
    }

    // SAFETY: callers keep `GlobalAlloc`'s contract; the impl's comment above says why it holds.
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.arena.owns(block) {
            // SAFETY: not a region block, so the system allocator's, with this layout.
            return unsafe { System.realloc(block, layout, new_size) };
        }
        // A block that shrinks stays where it is, the last one giving its end back.
        if self.arena.resize_in_place(block, layout.size(), new_size) || new_size <= layout.size() {
            return block;
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        // SAFETY: a layout of non-zero size (the block's own, grown).
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks hold at least the bytes copied, and a new block never
            // overlaps a live one.
            unsafe {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
        }
        moved
    }
}

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: Allocator<REGION> = Allocator {
    arena: Arena::new(),
};

/// Runs one evaluation with its blocks taken from the region (on the module's own target; a
/// plain call elsewhere).
pub fn evaluation<R>(call: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    return ALLOCATOR.arena.during(call);
    #[cfg(not(all(target_arch = "wasm32", not(target_feature = "atomics"))))]
    call()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).expect("layout")
    }

    fn offset<const N: usize>(arena: &Arena<N>, block: *mut u8) -> usize {
        block as usize - arena.base()
    }

    #[test]
    fn blocks_come_from_the_region_only_during_a_call() {
        let arena = Arena::<256>::new();
        assert_eq!(arena.take(layout(8, 8)), None);
        let block = arena.during(|| arena.take(layout(8, 8))).expect("a block");
        assert!(arena.owns(block));
        assert_eq!(arena.take(layout(8, 8)), None);
    }

    #[test]
    fn the_region_starts_over_only_when_its_last_block_is_freed() {
        let arena = Arena::<256>::new();
        arena.during(|| {
            let a = arena.take(layout(16, 8)).expect("a");
            let b = arena.take(layout(16, 8)).expect("b");
            assert_eq!(offset(&arena, b), 16);
            arena.give_back();
            // One block is still in use: the next one goes after it.
            let c = arena.take(layout(16, 8)).expect("c");
            assert_eq!(offset(&arena, c), 32);
            arena.give_back();
            arena.give_back();
            let d = arena.take(layout(16, 8)).expect("d");
            assert_eq!(d, a);
        });
    }

    #[test]
    fn a_block_kept_past_the_call_keeps_the_region_from_starting_over() {
        let arena = Arena::<64>::new();
        let kept = arena.during(|| arena.take(layout(32, 8))).expect("kept");
        arena.during(|| {
            let next = arena.take(layout(32, 8)).expect("next");
            assert_ne!(next, kept);
            arena.give_back();
            // `kept` is still live: the region is full, not reused.
            assert_eq!(arena.take(layout(32, 8)), None);
        });
    }

    #[test]
    fn blocks_are_aligned_as_asked_and_too_large_ones_do_not_fit() {
        let arena = Arena::<1024>::new();
        arena.during(|| {
            for align in [1, 2, 4, 8, 16, 32, 64, 128] {
                arena.take(layout(1, 1)).expect("a byte");
                let block = arena.take(layout(3, align)).expect("aligned");
                assert_eq!(block as usize % align, 0, "align {align}");
            }
            assert_eq!(arena.take(layout(2048, 8)), None);
        });
    }

    #[test]
    fn only_the_last_block_grows_in_place() {
        let arena = Arena::<256>::new();
        arena.during(|| {
            let first = arena.take(layout(16, 8)).expect("first");
            let last = arena.take(layout(16, 8)).expect("last");
            assert!(!arena.resize_in_place(first, 16, 32));
            assert!(arena.resize_in_place(last, 16, 64));
            assert!(!arena.resize_in_place(last, 64, 512));
            let next = arena.take(layout(8, 8)).expect("next");
            assert_eq!(offset(&arena, next), 16 + 64);
        });
    }

    #[test]
    fn the_allocator_falls_back_to_the_system_and_moves_contents_across() {
        let allocator = Allocator::<64> {
            arena: Arena::new(),
        };
        // SAFETY: every block is freed once, with the layout it was taken or resized with.
        allocator.arena.during(|| unsafe {
            let small = allocator.alloc(layout(16, 8));
            assert!(allocator.arena.owns(small));
            let stuck = allocator.alloc(layout(16, 8));
            ptr::copy_nonoverlapping(b"restage-gate!!!!".as_ptr(), small, 16);
            // `small` is not the last block: growing it moves it, and 1 KiB does not fit.
            let grown = allocator.realloc(small, layout(16, 8), 1024);
            assert!(!allocator.arena.owns(grown));
            assert_eq!(std::slice::from_raw_parts(grown, 16), b"restage-gate!!!!");
            allocator.dealloc(grown, layout(1024, 8));
            allocator.dealloc(stuck, layout(16, 8));
            // Both region blocks freed: the region starts over.
            assert_eq!(allocator.alloc(layout(16, 8)), small);
            // Shrinking keeps a block where it is, last or not.
            let other = allocator.alloc(layout(16, 8));
            assert_eq!(allocator.realloc(small, layout(16, 8), 8), small);
            assert_eq!(allocator.realloc(other, layout(16, 8), 8), other);
            allocator.dealloc(other, layout(8, 8));
            allocator.dealloc(small, layout(8, 8));
        });
        // SAFETY: a block taken and freed with the same layout.
        let outside = unsafe { allocator.alloc(layout(16, 8)) };
        assert!(!allocator.arena.owns(outside));
        // SAFETY: as above.
        unsafe { allocator.dealloc(outside, layout(16, 8)) };
    }
}
