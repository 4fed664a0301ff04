// libFuzzer target: the input is a program of constructor, commit, query, free and
// pack/unpack calls with arbitrary (often hostile) arguments on a small pool of handles.
// The engine must never crash, leak, read or write outside the buffers it is given, and must
// keep the API's promises; a broken promise aborts with the invariant that failed.
//
// Packing runs only where the type's true bounds say the touched memory fits a bounded
// buffer: buffers are allocated exactly that size so that ASan sees any stray byte.
#include <ucxdt/ucxdt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr int kSlots = 8;
constexpr int64_t kMaxArray = 24;         // entries of array arguments
constexpr int kMaxDims = 40;              // beyond the 32 allowed
constexpr int64_t kMaxSpan = 1 << 20;     // bytes of user memory one pack may touch
constexpr int64_t kMaxPacked = 1 << 20;   // bytes of one packed stream
constexpr int64_t kMaxAbsBound = int64_t{1} << 40;  // keeps buf + displacement inside the address space
constexpr int kMaxOps = 64;
// Plans hold their block list explicitly, so building one costs O(blocks), and blocks are at
// most the packed bytes: calls that build a plan are made only up to this many bytes.
constexpr int64_t kMaxPlanBytes = int64_t{4} << 20;
constexpr uint8_t kPoison = 0xA5;

// Whether a call on (count, type of `size` bytes) may build a plan: a plan is either cheap or
// must be refused before it is built (negative count, int64 overflow).
bool plan_is_cheap(int64_t count, int64_t size) {
    int64_t bytes;
    return count < 0 || __builtin_mul_overflow(count, size, &bytes) || bytes <= kMaxPlanBytes;
}

[[noreturn]] void violated(const char *what, int line) {
    std::fprintf(stderr, "fuzz_types: invariant violated at line %d: %s (last_error \"%s\")\n",
                 line, what, ucxdt_last_error());
    std::abort();
}
#define CHECK(c) ((c) ? (void)0 : violated(#c, __LINE__))

// Reads the program; past the end every read yields zero.
class Input {
public:
    Input(const uint8_t *d, size_t n) : d_(d), n_(n) {}
    bool done() const { return i_ >= n_; }
    uint8_t byte() { return i_ < n_ ? d_[i_++] : 0; }
    int64_t raw64() {
        uint64_t v = 0;
        for (int k = 0; k < 8; ++k) v = v << 8 | byte();
        return static_cast<int64_t>(v);
    }
    // A count, length, displacement or stride: mostly small, sometimes at the int64 edges.
    int64_t value() {
        static const int64_t edges[] = {0,
                                        1,
                                        -1,
                                        INT64_MAX,
                                        INT64_MIN,
                                        INT64_MAX / 2,
                                        INT64_MIN / 2,
                                        INT64_MAX / 8,
                                        INT64_MAX / 8 + 1,
                                        INT64_MAX - 8,
                                        INT64_MIN + 8,
                                        int64_t{1} << 31,
                                        int64_t{1} << 32,
                                        (int64_t{1} << 32) + 1,
                                        -(int64_t{1} << 32),
                                        4096};
        uint8_t sel = byte();
        switch (sel % 8) {
        case 0: case 1: case 2: return static_cast<int8_t>(byte()) % 12;
        case 3: return byte();
        case 4: return static_cast<int8_t>(byte()) * 8;
        case 5: return edges[byte() % (sizeof edges / sizeof edges[0])];
        case 6: {
            int hi = byte();
            return static_cast<int16_t>(hi << 8 | byte());
        }
        default: return raw64();
        }
    }
    // A count for an array constructor: negative values pass through (the arrays are then
    // never legitimately read); non-negative ones are capped at the array size we allocate.
    int64_t array_count() {
        int64_t c = value();
        return c < 0 ? c : c % (kMaxArray + 1);
    }

private:
    const uint8_t *d_;
    size_t n_;
    size_t i_ = 0;
};

void expect_error_recorded(ucxdt_status_t st) {
    CHECK(st <= UCXDT_OK && st >= UCXDT_ERR_UNSUPPORTED);
    if (st != UCXDT_OK) {
        CHECK(ucxdt_last_error() != nullptr && ucxdt_last_error()[0] != '\0');
        CHECK(ucxdt_status_string(st) != nullptr);
    }
}

bool all_poison(const uint8_t *p, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (p[i] != kPoison) return false;
    return true;
}

// malloc of exactly n bytes (ASan flags any access past them, even for n == 0).
struct Buf {
    uint8_t *p;
    int64_t n;
    explicit Buf(int64_t size, uint8_t fill) : p(static_cast<uint8_t *>(std::malloc(
                                                   static_cast<size_t>(size)))), n(size) {
        CHECK(p != nullptr || size == 0);
        if (n) std::memset(p, fill, static_cast<size_t>(n));
    }
    ~Buf() { std::free(p); }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
};

class Program {
public:
    ~Program() {
        for (int i = 0; i < kSlots; ++i)
            if (slot_[i] != UCXDT_TYPE_NULL) free_slot(i);
    }

    void run(Input &in) {
        for (int op = 0; op < kMaxOps && !in.done(); ++op) step(in);
    }

private:
    // A handle argument: a pool slot (possibly empty), a primitive (possibly out of range, so
    // NULL), or the most recently freed handle.
    ucxdt_type_t operand(Input &in) {
        uint8_t b = in.byte();
        if (b % 16 < 8) return slot_[b % kSlots];
        if (b % 16 == 15) return stale_;
        return ucxdt_type_primitive(static_cast<ucxdt_primitive_t>(b >> 4));
    }

    bool is_live(ucxdt_type_t t) const {
        if (t == UCXDT_TYPE_NULL) return false;
        for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p)
            if (t == ucxdt_type_primitive(static_cast<ucxdt_primitive_t>(p))) return true;
        return std::find(std::begin(slot_), std::end(slot_), t) != std::end(slot_);
    }

    // ---- tracing (UCXDT_FUZZ_TRACE=1): the calls of one input as C, for reproducers --------
    std::string name(ucxdt_type_t t) const {
        if (t == UCXDT_TYPE_NULL) return "UCXDT_TYPE_NULL";
        for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p)
            if (t == ucxdt_type_primitive(static_cast<ucxdt_primitive_t>(p)))
                return "ucxdt_type_primitive(" + std::to_string(p) + ")";
        for (int i = 0; i < kSlots; ++i)
            if (t == slot_[i]) return "s" + std::to_string(i);
        return t == stale_ ? "stale" : "garbage";  // stale: the last freed handle
    }
    static std::string num(int64_t v) {
        if (v == INT64_MIN) return "INT64_MIN";
        return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
    }
    static std::string arr(const int64_t *p, int64_t n) {
        if (!p) return "NULL";
        std::string s = "(int64_t[]){";
        for (int64_t i = 0; i < std::max<int64_t>(n, 1); ++i)
            s += (i ? "," : "") + (i < n ? num(p[i]) : "0");
        return s + "}";
    }
    std::string types_arr(const ucxdt_type_t *p, int64_t n) const {
        if (!p) return "NULL";
        std::string s = "(ucxdt_type_t[]){";
        for (int64_t i = 0; i < std::max<int64_t>(n, 1); ++i)
            s += (i ? "," : "") + (i < n ? name(p[i]) : "UCXDT_TYPE_NULL");
        return s + "}";
    }
    static void trace(const std::string &call, ucxdt_status_t st) {
        if (trace_on) std::fprintf(stderr, "  %s;  /* -> %d */\n", call.c_str(), st);
    }
    static void trace(const std::string &text) {
        if (trace_on) std::fprintf(stderr, "  %s\n", text.c_str());
    }

    std::vector<int64_t> values(Input &in, int64_t n) {
        std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
        for (int64_t &x : v) x = in.value();
        return v;
    }

    // Array argument of n entries, or NULL when the input asks for it (a probe of the
    // "NULL only with count 0" rule).
    static const int64_t *maybe_null(Input &in, const std::vector<int64_t> &v) {
        return in.byte() % 8 == 0 ? nullptr : v.data();
    }

    // Result of a constructor into slot `dst`.
    void store(int dst, const std::string &call, ucxdt_status_t st, ucxdt_type_t nt,
               ucxdt_type_t sentinel) {
        trace("nt = " + call, st);
        expect_error_recorded(st);
        if (st != UCXDT_OK) {
            CHECK(nt == sentinel);  // a failing call creates no handle
            return;
        }
        CHECK(nt != UCXDT_TYPE_NULL && nt != sentinel && !is_live(nt));
        // The replaced type may be an input of the new one, which must stay valid.
        if (slot_[dst] != UCXDT_TYPE_NULL) free_slot(dst);
        slot_[dst] = nt;
        trace("s" + std::to_string(dst) + " = nt;");
    }

    void free_slot(int i) {
        ucxdt_type_t old = slot_[i];
        trace("stale = s" + std::to_string(i) + ";");
        ucxdt_status_t st = ucxdt_type_free(&slot_[i]);
        trace("ucxdt_type_free(&s" + std::to_string(i) + ")", st);
        CHECK(st == UCXDT_OK && slot_[i] == UCXDT_TYPE_NULL);
        stale_ = old;
    }

    // Arguments are read from the input in statement order, so that a program decodes the
    // same way under every compiler.
    void step(Input &in) {
        const ucxdt_type_t sentinel = reinterpret_cast<ucxdt_type_t>(uintptr_t{0x5a5a0});
        ucxdt_type_t nt = sentinel;
        const uint8_t op = in.byte() % 16;
        const int dst = in.byte() % kSlots;
        switch (op) {
        case 0: {
            int64_t n = in.value();
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = ucxdt_type_contiguous(n, old, &nt);
            store(dst, "ucxdt_type_contiguous(" + num(n) + ", " + name(old) + ", &nt)", st, nt,
                  sentinel);
            break;
        }
        case 1:
        case 2: {
            int64_t n = in.value();
            int64_t bl = in.value();
            int64_t stride = in.value();
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = op == 1 ? ucxdt_type_vector(n, bl, stride, old, &nt)
                                        : ucxdt_type_hvector(n, bl, stride, old, &nt);
            store(dst,
                  std::string(op == 1 ? "ucxdt_type_vector(" : "ucxdt_type_hvector(") + num(n) +
                      ", " + num(bl) + ", " + num(stride) + ", " + name(old) + ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 3:
        case 4: {
            int64_t n = in.array_count();
            auto bl = values(in, n < 0 ? kMaxArray : n);
            auto d = values(in, n < 0 ? kMaxArray : n);
            const int64_t *blp = maybe_null(in, bl);
            const int64_t *dp = maybe_null(in, d);
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = op == 3 ? ucxdt_type_indexed(n, blp, dp, old, &nt)
                                        : ucxdt_type_hindexed(n, blp, dp, old, &nt);
            store(dst,
                  std::string(op == 3 ? "ucxdt_type_indexed(" : "ucxdt_type_hindexed(") +
                      num(n) + ", " + arr(blp, n) + ", " + arr(dp, n) + ", " + name(old) +
                      ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 5:
        case 6: {
            int64_t n = in.array_count();
            int64_t bl = in.value();
            auto d = values(in, n < 0 ? kMaxArray : n);
            const int64_t *dp = maybe_null(in, d);
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = op == 5 ? ucxdt_type_indexed_block(n, bl, dp, old, &nt)
                                        : ucxdt_type_hindexed_block(n, bl, dp, old, &nt);
            store(dst,
                  std::string(op == 5 ? "ucxdt_type_indexed_block("
                                      : "ucxdt_type_hindexed_block(") +
                      num(n) + ", " + num(bl) + ", " + arr(dp, n) + ", " + name(old) + ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 7: {
            int nd = static_cast<int>(in.byte() % (kMaxDims + 3)) - 2;
            if (in.byte() % 16 == 0) nd = static_cast<int>(in.raw64());
            int64_t have = std::clamp(nd, 0, kMaxDims);
            std::vector<int64_t> sizes(static_cast<size_t>(have)), sub(sizes), starts(sizes);
            // Mostly consistent shapes, so that valid subarrays are reached too.
            for (int64_t i = 0; i < have; ++i) {
                int64_t sz = in.byte() % 4 == 0 ? in.value() : 1 + in.byte() % 6;
                int64_t su = in.byte() % 4 == 0 || sz < 0 || sz > 255 ? in.value()
                                                                      : in.byte() % (sz + 1);
                int64_t room;
                int64_t st = in.byte() % 4 == 0 || __builtin_sub_overflow(sz, su, &room) ||
                                     room < 0 || room > 255
                                 ? in.value()
                                 : in.byte() % (room + 1);
                sizes[i] = sz, sub[i] = su, starts[i] = st;
            }
            // Kept as int: an out-of-range value may not sit in an enum-typed variable (UBSan).
            int order = in.byte() % 3;
            const int64_t *sp = maybe_null(in, sizes);
            const int64_t *up = maybe_null(in, sub);
            const int64_t *tp = maybe_null(in, starts);
            if (nd > 32) nd = 33;  // invalid, and within the arrays even if read
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = ucxdt_type_subarray(nd, sp, up, tp,
                                                    static_cast<ucxdt_order_t>(order), old, &nt);
            int64_t shown = std::clamp<int64_t>(nd, 0, have);
            store(dst,
                  "ucxdt_type_subarray(" + std::to_string(nd) + ", " + arr(sp, shown) + ", " +
                      arr(up, shown) + ", " + arr(tp, shown) + ", (ucxdt_order_t)" +
                      std::to_string(order) + ", " + name(old) + ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 8: {
            int64_t n = in.array_count();
            int64_t have = n < 0 ? kMaxArray : n;
            auto bl = values(in, have);
            auto d = values(in, have);
            std::vector<ucxdt_type_t> types(static_cast<size_t>(have));
            for (ucxdt_type_t &t : types) t = operand(in);
            const int64_t *blp = maybe_null(in, bl);
            const int64_t *dp = maybe_null(in, d);
            const ucxdt_type_t *tp = in.byte() % 8 == 0 ? nullptr : types.data();
            ucxdt_status_t st = ucxdt_type_struct(n, blp, dp, tp, &nt);
            store(dst,
                  "ucxdt_type_struct(" + num(n) + ", " + arr(blp, n) + ", " + arr(dp, n) +
                      ", " + types_arr(tp, n) + ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 9: {
            ucxdt_type_t old = operand(in);
            int64_t lb = in.value();
            int64_t extent = in.value();
            ucxdt_status_t st = ucxdt_type_resized(old, lb, extent, &nt);
            store(dst,
                  "ucxdt_type_resized(" + name(old) + ", " + num(lb) + ", " + num(extent) +
                      ", &nt)",
                  st, nt, sentinel);
            break;
        }
        case 10: {
            ucxdt_type_t old = operand(in);
            ucxdt_status_t st = ucxdt_type_dup(old, &nt);
            store(dst, "ucxdt_type_dup(" + name(old) + ", &nt)", st, nt, sentinel);
            break;
        }
        case 11: {
            ucxdt_type_t t = operand(in);
            ucxdt_status_t st = ucxdt_type_commit(t);
            trace("ucxdt_type_commit(" + name(t) + ")", st);
            expect_error_recorded(st);
            if (is_live(t))
                CHECK(st == UCXDT_OK || st == UCXDT_ERR_OVERFLOW || st == UCXDT_ERR_NO_MEMORY);
            else
                CHECK(st == UCXDT_ERR_INVALID_PARAM);
            break;
        }
        case 12: {
            if (slot_[dst] != UCXDT_TYPE_NULL) {
                free_slot(dst);
            } else {
                int prim = in.byte() % 16;
                ucxdt_type_t p = ucxdt_type_primitive(static_cast<ucxdt_primitive_t>(prim));
                ucxdt_type_t before = p;
                ucxdt_status_t st = ucxdt_type_free(&p);
                trace("ucxdt_type_free(&primitive " + std::to_string(prim) + ")", st);
                CHECK(st == UCXDT_ERR_INVALID_PARAM && p == before);
                expect_error_recorded(st);
            }
            break;
        }
        case 13: query(in, operand(in)); break;
        default: pack(in, operand(in)); break;
        }
    }

    void query(Input &in, ucxdt_type_t t) {
        trace("/* queries of " + name(t) + " */");
        int64_t size = -1, lb = 0, ext = 0, tlb = 0, text = -1;
        ucxdt_status_t st = ucxdt_type_size(t, &size);
        expect_error_recorded(st);
        if (!is_live(t)) {
            CHECK(st == UCXDT_ERR_INVALID_PARAM);
            return;
        }
        CHECK(st == UCXDT_OK && size >= 0);
        CHECK(ucxdt_type_extent(t, &lb, &ext) == UCXDT_OK);
        CHECK(ucxdt_type_true_extent(t, &tlb, &text) == UCXDT_OK);
        CHECK(text >= 0);
        if (size == 0) CHECK(tlb == 0 && text == 0);
        ucxdt_combiner_t comb;
        CHECK(ucxdt_type_combiner(t, &comb) == UCXDT_OK);
        CHECK(comb >= UCXDT_COMBINER_NAMED && comb <= UCXDT_COMBINER_DUP);

        ucxdt_signature_t one{}, none{};
        CHECK(ucxdt_type_signature(t, 1, &one) == UCXDT_OK);
        CHECK(ucxdt_type_signature(t, 0, &none) == UCXDT_OK && none.length == 0);
        CHECK((one.length == 0) == (size == 0) && one.length <= size);

        int64_t count = in.value();
        ucxdt_signature_t sig{};
        st = ucxdt_type_signature(t, count, &sig);
        expect_error_recorded(st);
        int64_t want_len = 0, unused;
        if (count < 0) {
            CHECK(st == UCXDT_ERR_INVALID_PARAM);
        } else if (__builtin_mul_overflow(count, one.length, &want_len)) {
            CHECK(st == UCXDT_ERR_OVERFLOW);
        } else if (__builtin_mul_overflow(count, size, &unused)) {
            // The sequence length fits but count elements' bytes do not: either is defensible.
            CHECK(st == UCXDT_OK || st == UCXDT_ERR_OVERFLOW);
            if (st == UCXDT_OK) CHECK(sig.length == want_len);
        } else {
            CHECK(st == UCXDT_OK && sig.length == want_len);
        }

        int64_t need = -1, bytes;
        st = ucxdt_pack_size(count, t, &need);
        expect_error_recorded(st);
        bool bytes_overflow = count >= 0 && __builtin_mul_overflow(count, size, &bytes);
        if (count < 0) CHECK(st == UCXDT_ERR_INVALID_PARAM);
        else if (bytes_overflow) CHECK(st == UCXDT_ERR_OVERFLOW);
        else CHECK(st == UCXDT_OK && need >= bytes);

        if (!plan_is_cheap(count, size)) return;
        ucxdt_plan_class_t cls;
        int64_t blocks = -1;
        st = ucxdt_type_plan_info(t, count, &cls, &blocks);
        expect_error_recorded(st);
        if (st == UCXDT_OK) {
            CHECK(count >= 0 && !bytes_overflow);
            CHECK(cls >= UCXDT_PLAN_CONTIGUOUS && cls <= UCXDT_PLAN_BLOCK_LIST);
            // Every block holds at least one whole primitive.
            CHECK(blocks >= 0 && (want_len == 0 ? blocks == 0 || blocks == 1 : blocks <= want_len));
        } else {
            CHECK(st == UCXDT_ERR_NOT_COMMITTED || st == UCXDT_ERR_INVALID_PARAM ||
                  st == UCXDT_ERR_OVERFLOW || st == UCXDT_ERR_NO_MEMORY);
            if (st == UCXDT_ERR_INVALID_PARAM) CHECK(count < 0);
        }
    }

    // Byte span [lo, hi) that `count` elements touch, element i at i x extent; false when it
    // does not fit the bounded buffers.
    static bool span_of(int64_t count, int64_t ext, int64_t tlb, int64_t text, int64_t *lo,
                        int64_t *hi) {
        if (count == 0 || text == 0) {
            *lo = *hi = 0;
            return true;
        }
        int64_t last, first_end;
        if (__builtin_mul_overflow(count - 1, ext, &last)) return false;
        if (__builtin_add_overflow(tlb, text, &first_end)) return false;
        int64_t a = tlb, b = first_end;
        if (__builtin_add_overflow(ext < 0 ? tlb : first_end, last, ext < 0 ? &a : &b))
            return false;
        *lo = a, *hi = b;
        return *lo > -kMaxAbsBound && *hi < kMaxAbsBound && *hi - *lo <= kMaxSpan;
    }

    void pack(Input &in, ucxdt_type_t t) {
        int64_t count = in.byte() % 5;
        if (in.byte() % 16 == 0) count = in.value();
        int64_t size = 0, lb, ext = 0, tlb = 0, text = 0;
        bool live = is_live(t);
        if (live) {
            CHECK(ucxdt_type_size(t, &size) == UCXDT_OK);
            CHECK(ucxdt_type_extent(t, &lb, &ext) == UCXDT_OK);
            CHECK(ucxdt_type_true_extent(t, &tlb, &text) == UCXDT_OK);
        }
        int64_t lo = 0, hi = 0, total = 0;
        bool fits = live && count >= 0 && span_of(count, ext, tlb, text, &lo, &hi) &&
                    !__builtin_mul_overflow(count, size, &total) && total <= kMaxPacked;
        trace("/* pack/unpack of " + num(count) + " x " + name(t) + ": size " + num(size) +
              ", extent " + num(ext) + ", true lb " + num(tlb) + ", true extent " + num(text) +
              (fits ? "" : " (does not fit the buffers: error paths only)") + " */");
        if (!fits) {
            if (live && !plan_is_cheap(count, size)) return;
            // Whatever the reason, a call that cannot be carried out writes nothing.
            uint8_t mem[16], out[16];
            std::memset(mem, kPoison, sizeof mem), std::memset(out, kPoison, sizeof out);
            int64_t pos = 0;
            ucxdt_status_t st = ucxdt_pack(mem, count, t, out, 0, &pos);
            expect_error_recorded(st);
            CHECK(pos == 0 && all_poison(out, 16));
            if (!live) CHECK(st == UCXDT_ERR_INVALID_PARAM);
            if (!live || count < 0) {
                st = ucxdt_unpack(out, 16, &pos, mem, count, t);
                CHECK(st != UCXDT_OK && pos == 0 && all_poison(mem, 16));
                if (!live) CHECK(st == UCXDT_ERR_INVALID_PARAM);
                expect_error_recorded(st);
            }
            return;
        }

        const int64_t span = hi - lo;
        Buf src(span, 0);
        for (int64_t i = 0; i < span; ++i) src.p[i] = static_cast<uint8_t>(i * 131 + 7);
        // buf such that buf + lo is the allocation: integer arithmetic, as lo may be far out.
        auto at = [lo](uint8_t *p) {
            return reinterpret_cast<uint8_t *>(reinterpret_cast<uintptr_t>(p) -
                                               static_cast<uintptr_t>(lo));
        };

        Buf stream(total, kPoison);
        int64_t pos = 0;
        ucxdt_status_t st = ucxdt_pack(at(src.p), count, t, stream.p, total, &pos);
        expect_error_recorded(st);
        if (st != UCXDT_OK) {
            CHECK(st == UCXDT_ERR_NOT_COMMITTED && pos == 0 && all_poison(stream.p, total));
            Buf piece(total, kPoison);
            st = ucxdt_pack_range(at(src.p), count, t, 0, piece.p, total);
            CHECK(st == UCXDT_ERR_NOT_COMMITTED && all_poison(piece.p, total));
            expect_error_recorded(st);
            return;
        }
        CHECK(pos == total);

        // One byte short: TRUNCATED, nothing written, position unchanged.
        if (total > 0) {
            Buf small(total - 1, kPoison);
            int64_t p2 = 0;
            st = ucxdt_pack(at(src.p), count, t, small.p, total - 1, &p2);
            CHECK(st == UCXDT_ERR_TRUNCATED && p2 == 0 && all_poison(small.p, total - 1));
            expect_error_recorded(st);
        }

        // Ranges at input-chosen offsets equal the same bytes of the whole stream.
        for (int k = in.byte() % 4; k > 0; --k) {
            int64_t a = total ? static_cast<int64_t>(static_cast<uint64_t>(in.raw64()) %
                                                     static_cast<uint64_t>(total + 1))
                              : 0;
            int64_t len = total - a ? in.byte() % (total - a + 1) : 0;
            Buf piece(len, kPoison);
            st = ucxdt_pack_range(at(src.p), count, t, a, piece.p, len);
            CHECK(st == UCXDT_OK);
            CHECK(len == 0 || std::memcmp(piece.p, stream.p + a, static_cast<size_t>(len)) == 0);
        }
        // A hostile range: rejected unless it lies inside [0, total], and nothing written.
        {
            int64_t a = in.value(), len = in.value();
            int64_t end;
            bool inside = a >= 0 && len >= 0 && !__builtin_add_overflow(a, len, &end) &&
                          end <= total;
            if (!inside) {
                uint8_t out[16];
                std::memset(out, kPoison, sizeof out);
                st = ucxdt_pack_range(at(src.p), count, t, a, out, len);
                CHECK(st != UCXDT_OK && all_poison(out, 16));
                expect_error_recorded(st);
                Buf dst(span, kPoison);
                st = ucxdt_unpack_range(out, a, len, at(dst.p), count, t);
                CHECK(st != UCXDT_OK && all_poison(dst.p, span));
                expect_error_recorded(st);
            }
        }

        // Round trip. A byte covered by several type-map entries receives the same source
        // value from each, so the result is independent of overlaps and write order.
        Buf back(span, kPoison);
        int64_t p3 = 0;
        st = ucxdt_unpack(stream.p, total, &p3, at(back.p), count, t);
        CHECK(st == UCXDT_OK && p3 == total);
        for (int64_t i = 0; i < span; ++i) CHECK(back.p[i] == kPoison || back.p[i] == src.p[i]);
        Buf again(total, 0);
        int64_t p4 = 0;
        CHECK(ucxdt_pack(at(back.p), count, t, again.p, total, &p4) == UCXDT_OK && p4 == total);
        CHECK(total == 0 || std::memcmp(again.p, stream.p, static_cast<size_t>(total)) == 0);

        // Too little packed input: TRUNCATED and nothing written.
        if (total > 0) {
            Buf untouched(span, kPoison);
            int64_t p5 = 0;
            st = ucxdt_unpack(stream.p, total - 1, &p5, at(untouched.p), count, t);
            CHECK(st == UCXDT_ERR_TRUNCATED && p5 == 0 && all_poison(untouched.p, span));
            expect_error_recorded(st);
        }

        // The same stream scattered in input-sized pieces gives the same memory.
        Buf pieces(span, kPoison);
        // Small pieces for short streams; at most 16 pieces for long ones to bound the time.
        for (int64_t a = 0; a < total;) {
            int64_t piece = total <= 4096 ? 1 + in.byte() % 64 : total / (1 + in.byte() % 16) + 1;
            int64_t len = std::min<int64_t>(total - a, piece);
            CHECK(ucxdt_unpack_range(stream.p + a, a, len, at(pieces.p), count, t) == UCXDT_OK);
            a += len;
        }
        CHECK(span == 0 || std::memcmp(pieces.p, back.p, static_cast<size_t>(span)) == 0);
    }

    ucxdt_type_t slot_[kSlots] = {};
    ucxdt_type_t stale_ = UCXDT_TYPE_NULL;
    static inline const bool trace_on = std::getenv("UCXDT_FUZZ_TRACE") != nullptr;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Program p;
    p.run(in);
    return 0;
}
