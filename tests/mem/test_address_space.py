"""Device memory as the driver lays it out (simgpu.mem.address_space): page-aligned large
arrays, packed small ones, the page tables' reserved region, capacity, freeing."""
import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from simgpu import DeviceMemoryError
from simgpu.configs import load_config
from simgpu.mem.address_space import ALIGNMENT, AddressSpace
from simgpu.lang import Array, i32, kernel

GTX = load_config("gtx260")
PAGE = GTX.tlb.page_bytes
CAPACITY = GTX.memory.global_memory_bytes


def test_large_arrays_start_on_a_page_and_small_ones_are_packed():
    dev = simgpu.get_device("sim:gtx260")
    small = dev.zeros(10, np.int32)
    big = dev.zeros(PAGE // 4 + 1, np.int32)           # a page and 4 bytes: two pages
    small2 = dev.to_device(np.arange(100, dtype=np.float32))
    big2 = dev.zeros(PAGE // 4, np.int32)              # exactly one page
    assert small.base == ALIGNMENT and small2.base == 2 * ALIGNMENT   # packed below the page
    assert big.base % PAGE == 0 and big2.base % PAGE == 0
    assert big2.base == big.base + 2 * PAGE            # whole pages taken
    assert np.array_equal(small2.to_host(), np.arange(100, dtype=np.float32))


def test_the_capacities_are_the_datasheets():
    assert load_config("gtx260").memory.global_memory_bytes == 896 * 2**20
    assert load_config("h100").memory.global_memory_bytes / 1e9 == pytest.approx(85.0, abs=0.1)
    assert load_config("h200").memory.global_memory_bytes / 1e9 == pytest.approx(150.1, abs=0.1)


def test_an_allocation_past_device_memory_fails_cleanly_and_changes_nothing():
    """Issue 18: a 1.2 GB array on the 896 MB GTX 260 raises DeviceMemoryError naming the
    request, what is in use and the capacity; nothing is allocated, no copy recorded, and
    no host memory is taken for it."""
    dev = simgpu.get_device("sim:gtx260")
    keep = dev.to_device(np.arange(1000, dtype=np.int32))
    before = (dev.memory.in_use, dev.memory.arrays, len(dev.copies))
    n = 300_000_000                                    # 1.2 GB of int32
    tracemalloc.start()
    try:
        with pytest.raises(DeviceMemoryError) as info:
            dev.zeros(n, np.int32)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20                              # no host array of 1.2 GB was made
    msg = str(info.value)
    for part in ("1,200,000,000 bytes", "300,000,000 x int32", "(300000000,)",
                 f"{dev.memory.in_use:,} bytes", f"{CAPACITY:,} bytes", "896.0 MiB",
                 "Nothing was allocated", "sim:gtx260"):
        assert part in msg, (part, msg)
    e = info.value
    assert isinstance(e, MemoryError)
    assert (e.requested, e.in_use, e.capacity) == (1_200_000_000, dev.memory.in_use, CAPACITY)
    assert (dev.memory.in_use, dev.memory.arrays, len(dev.copies)) == before
    # to_device of a host array that does not fit: refused before the copy
    host = np.zeros(n, np.int32)                       # calloc'ed: no pages touched
    with pytest.raises(DeviceMemoryError, match="shape \\(300000000,\\)"):
        dev.to_device(host)
    assert (dev.memory.in_use, dev.memory.arrays, len(dev.copies)) == before
    # and the device works as before
    again = dev.to_device(np.arange(5, dtype=np.int32))
    assert again.base == keep.base + 4096 and np.array_equal(keep.to_host(), np.arange(1000))


def test_what_is_freed_can_be_allocated_again():
    dev = simgpu.get_device("sim:gtx260")
    third = (CAPACITY // 3 // PAGE) * PAGE
    a = dev.zeros(third // 4, np.int32)
    b = dev.zeros(third // 4, np.int32)
    with pytest.raises(DeviceMemoryError):
        dev.zeros(third // 4 + PAGE, np.int32)         # a third and a page more: no room
    base_a = a.base
    del a
    gc.collect()
    c = dev.zeros(third // 4, np.int32)                # fits where a was (the unused space
    # above b is smaller than a third: freed blocks are taken when it has no room)
    assert c.base == base_a
    in_use = dev.memory.in_use
    del b, c
    gc.collect()
    assert dev.memory.in_use == dev.memory.reserved < in_use
    assert dev.memory.arrays == 0


def test_the_page_tables_are_reserved_at_the_top_of_memory():
    space = AddressSpace(GTX, "gtx")
    t = space.tables
    assert t.base + t.bytes <= CAPACITY and t.bytes % PAGE == 0
    assert space.reserved >= t.bytes and space.in_use == space.reserved
    # the largest array that fits ends below the tables
    base = space.allocate(t.base - PAGE)
    assert base == PAGE and base + t.base - PAGE <= t.base
    with pytest.raises(DeviceMemoryError):
        space.allocate(PAGE)                           # no page left
    assert space.allocate(1) == ALIGNMENT              # small ones fit below the first page
    # a config without [tlb] reserves nothing and packs everything
    import dataclasses
    flat = AddressSpace(dataclasses.replace(GTX, tlb=None))
    assert flat.reserved == 0 and flat.allocate(PAGE) == ALIGNMENT


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3 * PAGE), st.booleans()), min_size=1, max_size=30))
def test_blocks_never_overlap_and_freeing_everything_restores_the_space(ops):
    """Random allocations and frees: live blocks are disjoint, aligned, inside memory
    below the page tables, and the accounting returns to the reserved bytes."""
    space = AddressSpace(GTX, "gtx")
    live = {}
    for nbytes, free_one in ops:
        if free_one and live:
            base = min(live)
            space.release(base, live.pop(base))
            continue
        base = space.allocate(nbytes)
        align, size = space.span(nbytes)
        assert base % align == 0 and base >= ALIGNMENT and base + size <= space.tables.base
        for other, n in live.items():
            assert base + size <= other or other + space.span(n)[1] <= base
        live[base] = nbytes
    for base, n in list(live.items()):
        space.release(base, n)
    assert space.in_use == space.reserved and space._starts == [ALIGNMENT]
    assert space._ends == [space.tables.base]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3 * PAGE), st.integers(0, 3)), min_size=1, max_size=30))
def test_an_address_does_not_depend_on_what_was_freed(ops):
    """Issue 19: when an array is freed is Python's to say (a profiler holding a frame, a
    reference cycle), so the address of an allocation depends only on the sizes allocated
    before it: the same sizes give the same addresses whether earlier arrays were freed
    (the k-th newest live one, k = the op's second number; 3: none) or all kept, while
    they fit in memory."""
    freeing, keeping = AddressSpace(GTX, "gtx"), AddressSpace(GTX, "gtx")
    live = []
    for nbytes, k in ops:
        base = freeing.allocate(nbytes)
        assert base == keeping.allocate(nbytes)
        live.append((base, nbytes))
        if k < 3 and k < len(live):
            freeing.release(*live.pop(-1 - k))


@kernel
def add_one(a: Array[i32], n: i32):
    i = 0
    while i < n:
        a[i] = a[i] + 1
        i += 1


def test_results_do_not_depend_on_the_layout():
    dev = simgpu.get_device("sim:gtx260")
    a = dev.to_device(np.arange(PAGE // 4 + 7, dtype=np.int32))
    dev.launch(add_one, 1, 1, a, 50, engine="timed")
    assert np.array_equal(a.to_host()[:50], np.arange(50) + 1)
