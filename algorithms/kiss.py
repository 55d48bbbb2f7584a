"""KISS99: Marsaglia's "Keep It Simple Stupid" random number generator, host side.

The paper draws its random splitters (kernel RS2) and its random input lists
with KISS (Marsaglia & Zaman).  This module is the host reference: a scalar
generator, a vectorized bank of one generator per GPU thread, the single
seeding function that the device version must reproduce bit for bit, and the
mapping of a 32-bit draw onto a range.

Definition (Marsaglia, "Random numbers for C: End, at last?", sci.stat.math,
January 1999), every operation on uint32 with wrap-around::

    z     = 36969 * (z & 65535) + (z >> 16)        # 16-bit multiply-with-carry
    w     = 18000 * (w & 65535) + (w >> 16)        # 16-bit multiply-with-carry
    MWC   = (z << 16) + w
    jsr  ^= jsr << 17;  jsr ^= jsr >> 13;  jsr ^= jsr << 5     # SHR3, this order
    jcong = 69069 * jcong + 1234567                # CONG
    KISS  = (MWC ^ jcong) + jsr

The component updates touch disjoint state, so the order in which C
evaluates MWC, CONG and SHR3 inside the KISS macro cannot change the result.
Period about 2^123.

Check value (from the posting's test program, reproduced in tests/algorithms/
test_kiss.py): after ``settable(12345, 65435, 34221, 12345, ...)``, which itself
makes 256 KISS calls to fill a table, the 1,000,000th further KISS call returns
1372460312; i.e. the 1,000,256th output from state (12345, 65435, 34221, 12345).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_STATE",
    "KissState",
    "KissStreams",
    "kiss_stream",
    "kiss_stream_loop",
    "seed_words",
    "seed_words_array",
    "uniform_below",
    "mix64",
]

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF

# Marsaglia's default seeds: static UL z=362436069, w=521288629, jsr=123456789,
# jcong=380116160.
DEFAULT_STATE = (362436069, 521288629, 123456789, 380116160)

# A 16-bit MWC x' = a*(x & 0xffff) + (x >> 16) has two trivial cycles: 0 and the
# fixed point (a-1)*2^16 + 0xffff.  For a = 18000 two more states feed that
# fixed point: (2a-1)*2^16 + 0xfffe and (3a-1)*2^16 + 0xfffd.  All of these lie
# at or above the fixed point, except 0, so a seed in [1, fixed point) is always
# on a long cycle.  These bounds are what seed_words() reduces into.
Z_FIXED = (36969 - 1) << 16 | 0xFFFF  # 0x9068FFFF
W_FIXED = (18000 - 1) << 16 | 0xFFFF  # 0x464FFFFF

# splitmix64 (Steele, Lea & Flood 2014, as in Vigna's splitmix64.c).
GOLDEN64 = 0x9E3779B97F4A7C15
_SM_M1 = 0xBF58476D1CE4E5B9
_SM_M2 = 0x94D049BB133111EB


# --------------------------------------------------------------------------
# scalar generator
# --------------------------------------------------------------------------

@dataclass
class KissState:
    """One KISS99 generator: four uint32 words, Marsaglia's defaults unless given."""

    z: int = DEFAULT_STATE[0]
    w: int = DEFAULT_STATE[1]
    jsr: int = DEFAULT_STATE[2]
    jcong: int = DEFAULT_STATE[3]

    def __post_init__(self) -> None:
        for name in ("z", "w", "jsr", "jcong"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"KissState.{name} must be an integer, got {value!r}")
            if not 0 <= int(value) <= MASK32:
                raise ValueError(f"KissState.{name}={value} is not a uint32")
            setattr(self, name, int(value))

    @classmethod
    def from_seed(cls, seed: int, thread: int = 0) -> "KissState":
        """The state of thread `thread` of a run seeded with `seed` (see seed_words)."""
        return cls(*seed_words(seed, thread))

    def words(self) -> tuple[int, int, int, int]:
        return (self.z, self.w, self.jsr, self.jcong)

    # The three components are exposed on their own because Marsaglia's test
    # program checks each of them (CONG, SHR3, MWC) after the KISS test.
    def next_mwc(self) -> int:
        self.z = (36969 * (self.z & 65535) + (self.z >> 16)) & MASK32
        self.w = (18000 * (self.w & 65535) + (self.w >> 16)) & MASK32
        return ((self.z << 16) + self.w) & MASK32

    def next_cong(self) -> int:
        self.jcong = (69069 * self.jcong + 1234567) & MASK32
        return self.jcong

    def next_shr3(self) -> int:
        j = self.jsr
        j ^= (j << 17) & MASK32
        j ^= j >> 13
        j ^= (j << 5) & MASK32
        self.jsr = j
        return j

    def next_u32(self) -> int:
        """The next KISS99 output, ((MWC ^ CONG) + SHR3) mod 2^32."""
        return ((self.next_mwc() ^ self.next_cong()) + self.next_shr3()) & MASK32


def _as_state(seed) -> KissState:
    if isinstance(seed, KissState):
        return KissState(*seed.words())  # copy: never advance the caller's state
    if isinstance(seed, (tuple, list)) and len(seed) == 4:
        return KissState(*seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return KissState.from_seed(int(seed), 0)
    raise ValueError(f"seed must be an int, a KissState or 4 uint32 words, got {seed!r}")


def kiss_stream(n: int, seed=DEFAULT_STATE) -> np.ndarray:
    """The first n outputs of one KISS generator as uint32.

    `seed` is an int (thread 0 of seed_words(seed, .)), a KissState (copied, not
    advanced) or the 4 words (z, w, jsr, jcong).  Each component is computed
    for all n steps at once by jump-ahead (see _cong_steps, _mwc16_steps,
    _shr3_steps), so a million values take tens of milliseconds;
    kiss_stream_loop is the plain step-by-step reference it is tested against.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    st = _as_state(seed)
    # The MWC jump-ahead needs states at or below the fixed point (see _mwc_ok);
    # any state gets there within two steps, so take those steps one by one.
    first = []
    while len(first) < n and not (_mwc_ok(st.z, 36969) and _mwc_ok(st.w, 18000)):
        first.append(st.next_u32())
    z, w, jsr, jcong = st.words()
    k = n - len(first)
    zs = _mwc16_steps(z, 36969, k)
    ws = _mwc16_steps(w, 18000, k)
    mwc = (zs << np.uint32(16)) + ws
    rest = (mwc ^ _cong_steps(jcong, k)) + _shr3_steps(jsr, k)
    return np.concatenate([np.array(first, dtype=np.uint32), rest]) if first else rest


def kiss_stream_loop(n: int, seed=DEFAULT_STATE) -> np.ndarray:
    """kiss_stream computed one step at a time (about 2 us per value): the reference."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    z, w, jsr, jcong = _as_state(seed).words()
    out = [0] * n
    for i in range(n):
        z = 36969 * (z & 65535) + (z >> 16)  # stays < 2^32: no mask needed
        w = 18000 * (w & 65535) + (w >> 16)
        jcong = (69069 * jcong + 1234567) & MASK32
        jsr ^= (jsr << 17) & MASK32
        jsr ^= jsr >> 13
        jsr ^= (jsr << 5) & MASK32
        out[i] = (((((z << 16) + w) & MASK32) ^ jcong) + jsr) & MASK32
    return np.array(out, dtype=np.uint32)


# --- jump-ahead of the three components over k steps ----------------------

def _doubling(first: np.ndarray, k: int, advance) -> np.ndarray:
    """Fill out[0..k) where out[i] = T^i(first) for a map T, by doubling.

    advance(block, L) must return T^L applied to every element of block; it is
    called with L = 1, 2, 4, ... so it can keep T^L from call to call.
    """
    out = np.empty(k, dtype=first.dtype)
    if k == 0:
        return out
    out[0] = first[0]
    filled = 1
    while filled < k:
        m = min(filled, k - filled)
        out[filled:filled + m] = advance(out[:m], filled)
        filled += m
    return out


def _cong_steps(jcong: int, k: int) -> np.ndarray:
    """CONG outputs 1..k: x_i = A^i x_0 + C (1 + A + ... + A^(i-1)) mod 2^32."""
    if k == 0:
        return np.empty(0, dtype=np.uint32)
    a = np.uint32(69069)
    # uint32 array products and cumulative sums wrap mod 2^32, which is the point.
    pw = _doubling(np.array([a], np.uint32), k,
                   lambda blk, L: blk * np.uint32(pow(69069, L, 1 << 32)))
    geo = np.cumsum(np.concatenate([[np.uint32(1)], pw[:-1]]), dtype=np.uint32)
    return pw * np.uint32(jcong) + np.uint32(1234567) * geo


def _mwc_ok(x: int, a: int) -> bool:
    """True when the 16-bit MWC state x is at or below its fixed point M = a*2^16 - 1.

    Below M, x' = a*(x & 0xffff) + (x >> 16) equals a*x mod M (a*2^16 = 1 mod M)
    and stays below M: that is what the jump-ahead uses.  A state above M reaches
    M or below within two steps: with x = lo + 2^16*hi and d = 2^16 - lo, the next
    state a*2^16 - a*d + hi exceeds M only if hi >= a*d, and then it is
    a*2^16 + (hi - a*d), whose successor a*(hi - a*d + 1) <= a*(2^16 - a) < M.
    """
    return x <= a * 65536 - 1


def _mwc16_steps(x: int, a: int, k: int) -> np.ndarray:
    """One 16-bit MWC half, states 1..k, as x_i = x_0 a^i mod (a 2^16 - 1)."""
    mod = a * 65536 - 1
    if x == mod:  # the fixed point stays put (and a^i * M = 0 mod M would be wrong)
        return np.full(k, x, dtype=np.uint32)
    m64 = np.uint64(mod)
    # factors < 2^32 and mod < 2^32, so every product is < 2^64: exact in uint64
    pw = _doubling(np.array([a], np.uint64), k,
                   lambda blk, L: blk * np.uint64(pow(a, L, mod)) % m64)
    return (pw * np.uint64(x) % m64).astype(np.uint32)


def _shr3_steps(jsr: int, k: int) -> np.ndarray:
    """SHR3 outputs 1..k.  SHR3 is linear over GF(2)^32, so T^L is a 32x32 bit
    matrix; it is applied to a whole block through four 256-entry byte tables."""
    def columns_after(v: np.ndarray) -> np.ndarray:  # one SHR3 step, elementwise
        v = v ^ (v << np.uint32(17))
        v = v ^ (v >> np.uint32(13))
        return v ^ (v << np.uint32(5))

    cols = columns_after(np.uint32(1) << np.arange(32, dtype=np.uint32))  # T^1
    state = {"L": 1, "cols": cols}
    byte = np.arange(256, dtype=np.uint32)
    bits = ((byte[:, None] >> np.arange(8, dtype=np.uint32)) & np.uint32(1)).astype(bool)

    def apply(cols: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = np.zeros_like(v)
        for q in range(4):  # table[q][b] = T^L(b << 8q)
            table = np.bitwise_xor.reduce(np.where(bits, cols[8 * q:8 * q + 8], np.uint32(0)),
                                          axis=1)
            out ^= table[(v >> np.uint32(8 * q)) & np.uint32(255)]
        return out

    def advance(blk: np.ndarray, L: int) -> np.ndarray:
        while state["L"] < L:  # L doubles each call: square T^L once
            state["cols"] = apply(state["cols"], state["cols"])
            state["L"] *= 2
        return apply(state["cols"], blk)

    first = columns_after(np.array([jsr], dtype=np.uint32))
    return _doubling(first, k, advance)


# --------------------------------------------------------------------------
# seeding: the one function the device version must reproduce
# --------------------------------------------------------------------------

def mix64(x: int) -> int:
    """splitmix64's output function (a bijection of 64-bit integers)."""
    x &= MASK64
    x = ((x ^ (x >> 30)) * _SM_M1) & MASK64
    x = ((x ^ (x >> 27)) * _SM_M2) & MASK64
    return x ^ (x >> 31)


def seed_words(seed: int, thread: int) -> tuple[int, int, int, int]:
    """The KISS state (z, w, jsr, jcong) of thread `thread` for run seed `seed`.

    All arithmetic is on uint64 with wrap-around (seed and thread taken mod 2^64)::

        key   = mix64(mix64(seed) + thread)   # distinct threads -> distinct keys
        a     = mix64(key + GOLDEN64)          # two splitmix64 outputs
        b     = mix64(key + 2 * GOLDEN64)      #   of the stream starting at key
        z     = 1 + (lo32(a) % (Z_FIXED - 1))  # in [1, 0x9068FFFF)
        w     = 1 + (hi32(a) % (W_FIXED - 1))  # in [1, 0x464FFFFF)
        jsr   = 1 + (lo32(b) % 0xFFFFFFFF)     # in [1, 2^32): SHR3 must be non-zero
        jcong = hi32(b)                        # CONG accepts any value

    mix64 is splitmix64's finalizer (x ^= x>>30; x *= 0xBF58476D1CE4E5B9;
    x ^= x>>27; x *= 0x94D049BB133111EB; x ^= x>>31) and GOLDEN64 =
    0x9E3779B97F4A7C15.  The reductions keep z and w off 0 and off the MWC fixed
    points (see Z_FIXED, W_FIXED), so every thread's MWC halves run on their long
    cycles; the modulo bias (< 2^-31) is irrelevant here.  On the device this is
    a handful of 64-bit multiplies per thread, done once in the seeding kernel.
    """
    base = mix64(int(seed))
    key = mix64(base + int(thread))
    a = mix64(key + GOLDEN64)
    b = mix64(key + 2 * GOLDEN64)
    z = 1 + (a & MASK32) % (Z_FIXED - 1)
    w = 1 + (a >> 32) % (W_FIXED - 1)
    jsr = 1 + (b & MASK32) % MASK32
    jcong = b >> 32
    return (z, w, jsr, jcong)


def _mix64_array(x: np.ndarray) -> np.ndarray:
    # uint64 array arithmetic wraps silently, exactly like the scalar & MASK64.
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(_SM_M1)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(_SM_M2)
    return x ^ (x >> np.uint64(31))


def seed_words_array(seed: int, threads) -> tuple[np.ndarray, ...]:
    """seed_words for an array of thread ids at once: four uint32 arrays."""
    t = np.asarray(threads)
    if t.dtype.kind not in "iu":
        raise ValueError(f"thread ids must be integers, got dtype {t.dtype}")
    if t.size and t.min() < 0:
        raise ValueError("thread ids must be >= 0")
    base = np.uint64(mix64(int(seed)))
    key = _mix64_array(t.astype(np.uint64) + base)
    a = _mix64_array(key + np.uint64(GOLDEN64))
    b = _mix64_array(key + np.uint64((2 * GOLDEN64) & MASK64))
    lo = np.uint64(MASK32)
    z = (np.uint64(1) + (a & lo) % np.uint64(Z_FIXED - 1)).astype(np.uint32)
    w = (np.uint64(1) + (a >> np.uint64(32)) % np.uint64(W_FIXED - 1)).astype(np.uint32)
    jsr = (np.uint64(1) + (b & lo) % np.uint64(MASK32)).astype(np.uint32)
    jcong = (b >> np.uint64(32)).astype(np.uint32)
    return z, w, jsr, jcong


# --------------------------------------------------------------------------
# vectorized bank: one generator per GPU thread
# --------------------------------------------------------------------------

class KissStreams:
    """`count` independent KISS generators, one per GPU thread, as uint32 arrays.

    Thread t starts from seed_words(seed, first_thread + t).  `.next()` advances
    every generator once and returns their outputs; element t equals what
    KissState.from_seed(seed, first_thread + t) would produce, step for step.
    `first_thread` lets a large bank be built in chunks with identical results.
    """

    def __init__(self, seed: int, count: int, first_thread: int = 0):
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        threads = np.arange(first_thread, first_thread + count, dtype=np.uint64)
        self.z, self.w, self.jsr, self.jcong = seed_words_array(seed, threads)

    @classmethod
    def from_words(cls, z, w, jsr, jcong) -> "KissStreams":
        """A bank with explicit states (copied), e.g. to continue a device run."""
        obj = cls.__new__(cls)
        arrays = [np.array(x, dtype=np.uint32, ndmin=1) for x in (z, w, jsr, jcong)]
        if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
            raise ValueError("z, w, jsr, jcong must be 1-D arrays of one length")
        obj.z, obj.w, obj.jsr, obj.jcong = arrays
        return obj

    def __len__(self) -> int:
        return len(self.z)

    def state(self, t: int) -> KissState:
        """A scalar copy of thread t's current state."""
        return KissState(int(self.z[t]), int(self.w[t]), int(self.jsr[t]), int(self.jcong[t]))

    def next(self) -> np.ndarray:
        """One KISS99 output per thread (uint32 array of length count)."""
        # The same expressions as kiss_stream; uint32 arrays wrap mod 2^32.
        z, w, j = self.z, self.w, self.jsr
        z = np.uint32(36969) * (z & np.uint32(65535)) + (z >> np.uint32(16))
        w = np.uint32(18000) * (w & np.uint32(65535)) + (w >> np.uint32(16))
        c = np.uint32(69069) * self.jcong + np.uint32(1234567)
        j = j ^ (j << np.uint32(17))
        j = j ^ (j >> np.uint32(13))
        j = j ^ (j << np.uint32(5))
        self.z, self.w, self.jsr, self.jcong = z, w, j, c
        return (((z << np.uint32(16)) + w) ^ c) + j

    def next_below(self, bound: int) -> np.ndarray:
        """One draw per thread in [0, bound), via uniform_below (int64 array)."""
        return uniform_below(self.next(), bound)


# --------------------------------------------------------------------------
# ranges
# --------------------------------------------------------------------------

def uniform_below(x, bound):
    """Map uint32 draw(s) x onto [0, bound) by multiply-high: (x * bound) >> 32.

    Lemire's method without the rejection step: the top 32 bits of the 64-bit
    product.  On the device it is one __umulhi(x, bound), so host and device get
    the same value from the same draw.  Uses the draw's high bits (the good ones
    for CONG-like components); the bias is at most bound / 2^32 per value.
    bound (an int, or an integer array matching x) must be in [1, 2^32].
    Arrays give int64 arrays, scalars give ints.
    """
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and np.ndim(bound) == 0:
        bound = int(bound)
        if not 1 <= bound <= 1 << 32:
            raise ValueError(f"bound must be in [1, 2^32], got {bound}")
        if not 0 <= int(x) <= MASK32:
            raise ValueError(f"x={x} is not a uint32")
        return (int(x) * bound) >> 32
    x = np.asarray(x)
    if x.dtype != np.uint32:
        raise ValueError(f"x must be uint32, got dtype {x.dtype}")
    b = np.asarray(bound)
    if b.dtype.kind not in "iu":
        raise ValueError(f"bound must be integer, got dtype {b.dtype}")
    if b.size and (b.min() < 1 or int(b.max()) > 1 << 32):
        raise ValueError(f"bound must be in [1, 2^32], got range [{b.min()}, {b.max()}]")
    # x <= 2^32 - 1 and bound <= 2^32, so the product is < 2^64: exact in uint64
    prod = x.astype(np.uint64) * b.astype(np.uint64)
    return (prod >> np.uint64(32)).astype(np.int64)


# --------------------------------------------------------------------------
# device side: the same generator as kernel-language device functions
# --------------------------------------------------------------------------
# A thread's KISS state lives in global memory, four uint32 words per
# generator: state[4*g + 0..3] = (z, w, jsr, jcong) of generator g (usually
# the thread's id).  Device functions return one scalar, so kiss_next advances
# the words in place and returns the draw.  kiss_seed_device(state, g, seed,
# thread) writes seed_words(seed, thread); the expressions are those of
# seed_words / KissStreams.next on uint64 / uint32 with C wrap-around, so a
# kernel's draws equal KissStreams(seed, count).next() bit for bit
# (tests/algorithms/test_list_ranking_kiss.py).  kiss_below is uniform_below:
# (x * bound) >> 32, one __umulhi on the GPU.

from simgpu.lang import Array, device_function, i32, i64, u32, u64  # noqa: E402

GOLDEN64_X2 = (2 * GOLDEN64) & MASK64  # 2 * GOLDEN64 mod 2^64, a kernel constant


@device_function
def mix64_device(x: u64) -> u64:
    """mix64 (splitmix64's finalizer) on the device."""
    x = (x ^ (x >> 30)) * _SM_M1
    x = (x ^ (x >> 27)) * _SM_M2
    return x ^ (x >> 31)


@device_function
def kiss_seed_device(state: Array[u32], g: i32, seed: u64, thread: u64):
    """state[4g .. 4g+3] = seed_words(seed, thread) (seed, thread taken mod 2^64)."""
    key = mix64_device(mix64_device(seed) + thread)
    a = mix64_device(key + GOLDEN64)
    b = mix64_device(key + GOLDEN64_X2)
    base = 4 * i64(g)
    state[base] = u32(1 + (a & MASK32) % (Z_FIXED - 1))
    state[base + 1] = u32(1 + (a >> 32) % (W_FIXED - 1))
    state[base + 2] = u32(1 + (b & MASK32) % MASK32)
    state[base + 3] = u32(b >> 32)


@device_function
def kiss_next(state: Array[u32], g: i32) -> u32:
    """Advance generator g (state[4g .. 4g+3]) by one step; return its KISS99 output."""
    base = 4 * i64(g)
    z = state[base]
    w = state[base + 1]
    jsr = state[base + 2]
    jcong = state[base + 3]
    z = 36969 * (z & 65535) + (z >> 16)
    w = 18000 * (w & 65535) + (w >> 16)
    jcong = 69069 * jcong + 1234567
    jsr ^= jsr << 17
    jsr ^= jsr >> 13
    jsr ^= jsr << 5
    state[base] = z
    state[base + 1] = w
    state[base + 2] = jsr
    state[base + 3] = jcong
    return (((z << 16) + w) ^ jcong) + jsr


@device_function
def kiss_below(x: u32, bound: i64) -> i64:
    """uniform_below(x, bound) on the device: (x * bound) >> 32, for 1 <= bound <= 2^32."""
    return i64((u64(x) * u64(bound)) >> 32)
