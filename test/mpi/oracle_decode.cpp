// The MPI oracle: MPI types decoded into ucxdt (named, pair, darray, F90 types, errors, shared
// and uncommitted children), and the application layouts against MPI.
#include "oracle_check.hpp"

namespace {

using namespace oracle;


TEST(OracleDecode, NamedTypes) {
    constexpr auto S4 = UCXDT_INT32, U4 = UCXDT_UINT32, S8 = UCXDT_INT64;
    const std::vector<NamedCase> cases = {
        {MPI_BYTE, "MPI_BYTE", UCXDT_BYTE},
        {MPI_PACKED, "MPI_PACKED", UCXDT_BYTE},
        {MPI_CHAR, "MPI_CHAR", UCXDT_CHAR},
        {MPI_CHARACTER, "MPI_CHARACTER", UCXDT_CHAR},
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", UCXDT_INT8},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", UCXDT_UINT8},
        {MPI_SHORT, "MPI_SHORT", UCXDT_INT16},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", UCXDT_UINT16},
        {MPI_INT, "MPI_INT", S4},
        {MPI_UNSIGNED, "MPI_UNSIGNED", U4},
        {MPI_LONG, "MPI_LONG", S8},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", UCXDT_UINT64},
        {MPI_LONG_LONG, "MPI_LONG_LONG", S8},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", UCXDT_UINT64},
        {MPI_INT8_T, "MPI_INT8_T", UCXDT_INT8},
        {MPI_INT16_T, "MPI_INT16_T", UCXDT_INT16},
        {MPI_INT32_T, "MPI_INT32_T", UCXDT_INT32},
        {MPI_INT64_T, "MPI_INT64_T", UCXDT_INT64},
        {MPI_UINT8_T, "MPI_UINT8_T", UCXDT_UINT8},
        {MPI_UINT16_T, "MPI_UINT16_T", UCXDT_UINT16},
        {MPI_UINT32_T, "MPI_UINT32_T", UCXDT_UINT32},
        {MPI_UINT64_T, "MPI_UINT64_T", UCXDT_UINT64},
        {MPI_WCHAR, "MPI_WCHAR", WCHAR_MIN < 0 ? S4 : U4},
        {MPI_C_BOOL, "MPI_C_BOOL", UCXDT_UINT8},
        {MPI_AINT, "MPI_AINT", S8},
        {MPI_OFFSET, "MPI_OFFSET", S8},
        {MPI_COUNT, "MPI_COUNT", S8},
        {MPI_FLOAT, "MPI_FLOAT", UCXDT_FLOAT},
        {MPI_DOUBLE, "MPI_DOUBLE", UCXDT_DOUBLE},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", UCXDT_LONG_DOUBLE},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", UCXDT_FLOAT_COMPLEX},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", UCXDT_DOUBLE_COMPLEX},
        {MPI_INTEGER, "MPI_INTEGER", S4},
        {MPI_LOGICAL, "MPI_LOGICAL", U4},
        {MPI_REAL, "MPI_REAL", UCXDT_FLOAT},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", UCXDT_DOUBLE},
        {MPI_COMPLEX, "MPI_COMPLEX", UCXDT_FLOAT_COMPLEX},
        {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", UCXDT_DOUBLE_COMPLEX},
    };
    for (const NamedCase &c : cases) {
        int size = 0;
        MPI_Type_size(c.type, &size);
        ASSERT_EQ(size, L::primitive_size(c.expect)) << c.name << ": unexpected ABI";
        Handle h;
        EXPECT_EQ(check_import(c.type, &h.t), "") << c.name;
        if (h.t != UCXDT_TYPE_NULL) {
            EXPECT_TRUE(same_signature(h.t, P(c.expect))) << c.name << " is not one primitive";
        }
    }
    // No long double complex primitive: two long doubles.
    Handle h, two;
    ASSERT_EQ(check_import(MPI_C_LONG_DOUBLE_COMPLEX, &h.t), "");
    ASSERT_EQ(ucxdt_type_contiguous(2, P(UCXDT_LONG_DOUBLE), &two.t), UCXDT_OK);
    EXPECT_TRUE(same_signature(h.t, two.t));
}


TEST(OracleDecode, PairTypes) {
    struct Pair {
        MPI_Datatype type;
        const char *name;
        ucxdt_primitive_t a, b;
    };
    const std::vector<Pair> pairs = {
        {MPI_FLOAT_INT, "MPI_FLOAT_INT", UCXDT_FLOAT, UCXDT_INT32},
        {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", UCXDT_DOUBLE, UCXDT_INT32},
        {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", UCXDT_LONG_DOUBLE, UCXDT_INT32},
        {MPI_LONG_INT, "MPI_LONG_INT", UCXDT_INT64, UCXDT_INT32},
        {MPI_SHORT_INT, "MPI_SHORT_INT", UCXDT_INT16, UCXDT_INT32},
        {MPI_2INT, "MPI_2INT", UCXDT_INT32, UCXDT_INT32},
        {MPI_2REAL, "MPI_2REAL", UCXDT_FLOAT, UCXDT_FLOAT},
        {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", UCXDT_DOUBLE, UCXDT_DOUBLE},
        {MPI_2INTEGER, "MPI_2INTEGER", UCXDT_INT32, UCXDT_INT32},
#ifdef MPI_2COMPLEX  // MPICH 4.0 does not define them
        {MPI_2COMPLEX, "MPI_2COMPLEX", UCXDT_FLOAT_COMPLEX, UCXDT_FLOAT_COMPLEX},
        {MPI_2DOUBLE_COMPLEX, "MPI_2DOUBLE_COMPLEX", UCXDT_DOUBLE_COMPLEX, UCXDT_DOUBLE_COMPLEX},
#endif
    };
    for (const Pair &p : pairs) {
        Handle h, ref;
        EXPECT_EQ(check_import(p.type, &h.t), "") << p.name;
        const int64_t bl[2] = {1, 1}, disp[2] = {0, 64};
        const ucxdt_type_t kids[2] = {P(p.a), P(p.b)};
        ASSERT_EQ(ucxdt_type_struct(2, bl, disp, kids, &ref.t), UCXDT_OK);
        if (h.t != UCXDT_TYPE_NULL) {
            EXPECT_TRUE(same_signature(h.t, ref.t)) << p.name;
        }
    }
    // Inside a derived type too, where the pair's padded extent steps the copies.
    MpiType v;
    ASSERT_EQ(MPI_Type_vector(3, 2, 3, MPI_DOUBLE_INT, &v.t), MPI_SUCCESS);
    EXPECT_EQ(check_import(v.t), "");
}


TEST(OracleDecode, Darray) {
    T::Rng rng(env_u64("UCXDT_TEST_SEED", 7));
    auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
    MpiType resized_int, vec;
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, -4, 12, &resized_int.t), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_vector(2, 1, 3, MPI_SHORT, &vec.t), MPI_SUCCESS);
    const MPI_Datatype olds[] = {MPI_INT, MPI_DOUBLE, MPI_BYTE, resized_int.t, vec.t};
    int configs = 0, checked = 0, true_bounds_differed = 0;
    // MPICH reports a darray's true bounds wrong: compared with those of its data instead.
    const T::Deviation *true_bounds = T::find_deviation(known(), "mpich-darray-true-bounds");
    for (int iter = 0; iter < 300; ++iter) {
        const int ndims = uni(1, 3);
        std::vector<int> gsizes(ndims), distribs(ndims), dargs(ndims), psizes(ndims);
        int nprocs = 1;
        for (int i = 0; i < ndims; ++i) {
            gsizes[i] = uni(1, 9);
            distribs[i] = uni(0, 2) == 0   ? MPI_DISTRIBUTE_BLOCK
                          : uni(0, 1) == 0 ? MPI_DISTRIBUTE_CYCLIC
                                           : MPI_DISTRIBUTE_NONE;
            // NONE with psize 1 is standard; Open MPI also accepts psize > 1 (blocks).
            psizes[i] = distribs[i] == MPI_DISTRIBUTE_NONE && uni(0, 3) ? 1 : uni(1, 3);
            nprocs *= psizes[i];
            const int per = (gsizes[i] + psizes[i] - 1) / psizes[i];
            if (distribs[i] == MPI_DISTRIBUTE_BLOCK)
                dargs[i] = uni(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : per + uni(0, 2);
            else if (distribs[i] == MPI_DISTRIBUTE_CYCLIC)
                dargs[i] = uni(0, 2) == 0 ? MPI_DISTRIBUTE_DFLT_DARG : uni(1, 3);
            else
                dargs[i] = MPI_DISTRIBUTE_DFLT_DARG;
        }
        const int order = uni(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        const int old_index = uni(0, 4);
        const MPI_Datatype old = olds[old_index];
        ++configs;
        int64_t total = 0;
        for (int rank = 0; rank < nprocs; ++rank) {
            MpiType d;
            ASSERT_EQ(MPI_Type_create_darray(nprocs, rank, ndims, gsizes.data(),
                                             distribs.data(), dargs.data(), psizes.data(),
                                             order, old, &d.t),
                      MPI_SUCCESS);
            std::ostringstream what;
            what << "darray rank " << rank << "/" << nprocs << " order "
                 << (order == MPI_ORDER_C ? "C" : "F") << " old#" << old_index;
            for (int i = 0; i < ndims; ++i)
                what << " [g " << gsizes[i] << " dist " << distribs[i] << " darg " << dargs[i]
                     << " p " << psizes[i] << "]";
            bool none_split = false;
            for (int i = 0; i < ndims; ++i)
                none_split |= distribs[i] == MPI_DISTRIBUTE_NONE && psizes[i] > 1;
            if (none_split) {
                // Erroneous in MPI-4.1; Open MPI distributes by blocks in C order and not at
                // all in Fortran order. Refused rather than guessed.
                ucxdt_type_t t = UCXDT_TYPE_NULL;
                EXPECT_EQ(ucxdt_type_from_mpi(d.t, &t), UCXDT_ERR_UNSUPPORTED) << what.str();
                EXPECT_EQ(t, UCXDT_TYPE_NULL);
                if (t != UCXDT_TYPE_NULL) ucxdt_type_free(&t);
                continue;
            }
            bool differed = false;
            EXPECT_EQ(check_import(d.t, nullptr, true_bounds, &differed), "") << what.str();
            if (differed) ++true_bounds_differed;
            total += mpi_bounds(d.t).size;
            ++checked;
        }
        // The ranks' pieces partition the array (a check of the test's configurations).
        int64_t cells = 1;
        for (int g : gsizes) cells *= g;
        int oldsize = 0;
        MPI_Type_size(old, &oldsize);
        if (!std::any_of(distribs.begin(), distribs.end(), [&](int d) {
                return d == MPI_DISTRIBUTE_NONE;
            }) || nprocs == 1) {
            EXPECT_EQ(total, cells * oldsize);
        }
    }
    std::printf("[ oracle   ] %d darray configurations, %d (config, rank) types checked\n",
                configs, checked);
    if (true_bounds)
        std::printf("[ oracle   ] known deviation %s: true bounds compared with those of the "
                    "data; the library's differed on %d types\n",
                    true_bounds->id, true_bounds_differed);
}


TEST(OracleDecode, F90Types) {
    // MPI_Type_create_f90_*: the representation MPI picks is known by its size.
    struct Case {
        const char *what;
        int kind;  // 0 real, 1 complex, 2 integer
        int p, r;
    };
    const Case cases[] = {{"real(6,30)", 0, 6, 30},       {"real(15,300)", 0, 15, 300},
                          {"complex(6,30)", 1, 6, 30},    {"complex(15,300)", 1, 15, 300},
                          {"integer(2)", 2, 0, 2},        {"integer(4)", 2, 0, 4},
                          {"integer(9)", 2, 0, 9},        {"integer(18)", 2, 0, 18}};
    for (const Case &c : cases) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        const int rc = c.kind == 0   ? MPI_Type_create_f90_real(c.p, c.r, &t)
                       : c.kind == 1 ? MPI_Type_create_f90_complex(c.p, c.r, &t)
                                     : MPI_Type_create_f90_integer(c.r, &t);
        ASSERT_EQ(rc, MPI_SUCCESS) << c.what;
        int size = 0;
        MPI_Type_size(t, &size);
        Handle h;
        EXPECT_EQ(check_import(t, &h.t), "") << c.what;
        // The primitive of that kind and size.
        ucxdt_primitive_t want = UCXDT_PRIMITIVE_LAST;
        for (int q = 0; q < UCXDT_PRIMITIVE_LAST; ++q) {
            const auto pq = static_cast<ucxdt_primitive_t>(q);
            const bool kind_ok = c.kind == 0   ? (pq == UCXDT_FLOAT || pq == UCXDT_DOUBLE ||
                                                pq == UCXDT_LONG_DOUBLE)
                                 : c.kind == 1 ? (pq == UCXDT_FLOAT_COMPLEX ||
                                                  pq == UCXDT_DOUBLE_COMPLEX)
                                               : (pq >= UCXDT_INT8 && pq <= UCXDT_INT64);
            if (kind_ok && L::primitive_size(pq) == size) want = pq;
        }
        ASSERT_NE(want, UCXDT_PRIMITIVE_LAST) << c.what << " has size " << size;
        if (h.t != UCXDT_TYPE_NULL) {
            EXPECT_TRUE(same_signature(h.t, P(want))) << c.what;
        }
        // f90 types count as predefined (MPI_Type_create_f90_real in MPI-4.1): never freed,
        // also not when a struct's MPI_Type_get_contents returns them.
        MpiType st;
        const int bl[2] = {2, 1};
        const MPI_Aint disp[2] = {0, -64};
        const MPI_Datatype types[2] = {t, MPI_INT};
        ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &st.t), MPI_SUCCESS);
        for (int round = 0; round < 2; ++round) EXPECT_EQ(check_import(st.t), "") << c.what;
        int64_t sz = 0;
        ASSERT_EQ(MPI_Type_size(t, &size), MPI_SUCCESS) << c.what << " was freed";
        ASSERT_EQ(ucxdt_type_size(h.t, &sz), UCXDT_OK);
    }
}


TEST(OracleDecode, Errors) {
    ucxdt_type_t t = reinterpret_cast<ucxdt_type_t>(0x1);  // must stay untouched on failure
    EXPECT_EQ(ucxdt_type_from_mpi(MPI_DATATYPE_NULL, &t), UCXDT_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(ucxdt_last_error()).find("MPI_DATATYPE_NULL"), std::string::npos)
        << ucxdt_last_error();
    EXPECT_EQ(t, reinterpret_cast<ucxdt_type_t>(0x1));
    EXPECT_EQ(ucxdt_type_from_mpi(MPI_INT, nullptr), UCXDT_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(ucxdt_last_error()), "");
    // A type whose extent does not fit int64 (both MPIs accept it, wrapping): refused, with a
    // message that outlives the import's cleanup.
    MpiType wide;
    ASSERT_EQ(MPI_Type_create_hvector(2, 1, INT64_MIN, MPI_CHAR, &wide.t), MPI_SUCCESS);
    EXPECT_EQ(ucxdt_type_from_mpi(wide.t, &t), UCXDT_ERR_OVERFLOW);
    EXPECT_NE(std::string(ucxdt_last_error()).find("overflow"), std::string::npos)
        << ucxdt_last_error();
    EXPECT_EQ(t, reinterpret_cast<ucxdt_type_t>(0x1));
    // A successful call clears the message.
    Handle h;
    ASSERT_EQ(ucxdt_type_from_mpi(MPI_INT, &h.t), UCXDT_OK);
    EXPECT_EQ(std::string(ucxdt_last_error()), "");
    // The result is committed and is the caller's to free (also for a predefined type).
    int64_t pos = 0;
    int v = 42;
    std::byte out[4];
    EXPECT_EQ(ucxdt_pack(&v, 1, h.t, out, 4, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(ucxdt_type_free(&h.t), UCXDT_OK);
}


TEST(OracleDecode, SharedAndUncommittedChildren) {
    // One derived child used by several entries and levels (decoded once, freed once), an
    // uncommitted outer type, dups and resized types; the MPI types stay usable afterwards.
    MpiType vec, rz, st, dp, outer;
    ASSERT_EQ(MPI_Type_vector(3, 2, -4, MPI_FLOAT, &vec.t), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_create_resized(vec.t, -40, 56, &rz.t), MPI_SUCCESS);
    const int bl[4] = {1, 2, 0, 1};
    const MPI_Aint disp[4] = {0, 200, -50, -300};
    const MPI_Datatype types[4] = {vec.t, rz.t, vec.t, MPI_DOUBLE_INT};
    ASSERT_EQ(MPI_Type_create_struct(4, bl, disp, types, &st.t), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_dup(st.t, &dp.t), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_contiguous(2, dp.t, &outer.t), MPI_SUCCESS);
    for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(check_import(outer.t), "");
        EXPECT_EQ(check_import(st.t), "");
    }
    ucxdt_combiner_t comb;
    Handle h;
    ASSERT_EQ(ucxdt_type_from_mpi(outer.t, &h.t), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_combiner(h.t, &comb), UCXDT_OK);
    EXPECT_EQ(comb, UCXDT_COMBINER_CONTIGUOUS);
    // Still valid MPI types after the imports freed what get_contents returned.
    EXPECT_EQ(MPI_Type_commit(&outer.t), MPI_SUCCESS);
    EXPECT_EQ(check_import(outer.t), "");
}


TEST(Oracle, ApplicationLayouts) {
    const auto layouts = L::application_layouts();
    ASSERT_FALSE(layouts.empty());
    T::Rng rng(env_u64("UCXDT_TEST_SEED", 11));
    int checked = 0, skipped = 0;
    Stats stats;
    for (const L::Layout &lay : layouts) {
        SCOPED_TRACE(lay.name);
        MpiType mt(T::to_mpi(*lay.type));
        Handle imp, nat;
        ASSERT_EQ(ucxdt_type_from_mpi(mt.t, &imp.t), UCXDT_OK) << ucxdt_last_error();
        ASSERT_EQ(L::build(*lay.type, &nat.t), UCXDT_OK) << ucxdt_last_error();
        const Bounds mb = mpi_bounds(mt.t);
        std::vector<const L::TypeDesc *> seen;
        EXPECT_EQ(check_subtypes(*lay.type, stats, seen), "");
        // Checked against MPI throughout, also where a known deviation's predicate holds
        // (they hold more widely than the library deviates): the library gets these right.
        for (const T::Deviation *d : T::deviations_of(*lay.type, known()))
            std::printf("[ oracle   ] %s: %s may apply; compared against MPI all the same\n",
                        lay.name.c_str(), d->id);
        EXPECT_EQ(check_bounds("layout", *lay.type, mt.t, imp.t, nat.t, {}, stats), "");
        EXPECT_EQ(compare_signature(imp.t, nat.t, lay.count, "imported vs native"), "");
        if (lay.expect_packed >= 0) {
            EXPECT_EQ(lay.expect_packed, mb.size) << "packed vs MPI";
        }
        if (lay.expect_extent >= 0) {
            EXPECT_EQ(lay.expect_extent, mb.extent) << "extent vs MPI";
        }
        if (lay.expect_true_extent >= 0) {
            EXPECT_EQ(lay.expect_true_extent, mb.true_extent) << "true extent vs MPI";
        }

        const int64_t total = mb.size * lay.count;
        if (total > INT_MAX) {  // beyond MPI_Pack's int sizes
            ++skipped;
            continue;
        }
        // The layout's buffer must hold what the type map touches.
        const T::BufferSpan need = T::mpi_span(mt.t, lay.count, 0);
        ASSERT_GE(lay.origin_bytes, need.origin) << "buffer too small below the origin";
        ASSERT_GE(lay.buffer_bytes - lay.origin_bytes, need.bytes - need.origin)
            << "buffer too small above the origin";

        Bytes buf(static_cast<size_t>(lay.buffer_bytes));
        ucxdt::ref::fill_pattern(buf.data(), lay.buffer_bytes, 1234);
        const std::byte *origin = buf.data() + lay.origin_bytes;
        Bytes expected(static_cast<size_t>(std::max<int64_t>(total, 1)));
        ASSERT_EQ(mpi_pack(origin, lay.count, mt.t, expected), MPI_SUCCESS);
        expected.resize(static_cast<size_t>(total));
        EXPECT_EQ(check_pack(origin, lay.count, imp.t, nat.t, expected, rng, stats), "");
        const Bytes packed_ref = ucxdt::ref::pack(*lay.type, lay.count, origin);
        EXPECT_TRUE(packed_ref == expected) << "reference pack differs from MPI_Pack";

        // Receive side: the same layout, poisoned alike for MPI_Unpack and ucxdt.
        Bytes poison(buf.size());
        ucxdt::ref::fill_pattern(poison.data(), lay.buffer_bytes, 999);
        Bytes want_ref = poison, want_mpi = poison, got = poison, got_imp = poison;
        ucxdt::ref::unpack(*lay.type, lay.count, expected.data(), total,
                           want_ref.data() + lay.origin_bytes);
        ASSERT_EQ(mpi_unpack(expected, want_mpi.data() + lay.origin_bytes, lay.count, mt.t),
                  MPI_SUCCESS);
        EXPECT_EQ(first_diff(want_ref.data(), want_mpi.data(), lay.buffer_bytes,
                             "reference unpack vs MPI_Unpack"),
                  "");
        int64_t pos = 0;
        ASSERT_EQ(ucxdt_unpack(expected.data(), total, &pos, got_imp.data() + lay.origin_bytes,
                               lay.count, imp.t),
                  UCXDT_OK)
            << ucxdt_last_error();
        EXPECT_EQ(first_diff(got_imp.data(), want_mpi.data(), lay.buffer_bytes,
                             "ucxdt_unpack (imported) vs MPI_Unpack"),
                  "");
        auto s = segments(total, 7, rng);
        reorder(s, Order::RANDOM, rng);
        for (auto [off, len] : s)
            ASSERT_EQ(ucxdt_unpack_range(expected.data() + off, off, len,
                                         got.data() + lay.origin_bytes, lay.count, nat.t),
                      UCXDT_OK)
                << ucxdt_last_error();
        const std::string d = first_diff(got.data(), want_mpi.data(), lay.buffer_bytes,
                                         "unpack_range (native) vs MPI_Unpack");
        if (!d.empty()) ++stats.native_vs_mpi;
        EXPECT_EQ(d, "");
        ++checked;
    }
    std::printf("[ oracle   ] %d application layouts checked against MPI, %lld subtypes, "
                "%d skipped (packed size beyond int); native vs MPI differ in %lld, reference "
                "walker vs MPI in %lld, imports resized to MPI's bounds: %lld\n",
                checked, static_cast<long long>(stats.nodes), skipped,
                static_cast<long long>(stats.native_vs_mpi),
                static_cast<long long>(stats.reference_vs_mpi),
                static_cast<long long>(stats.import_resized));
    EXPECT_EQ(stats.native_vs_mpi, 0);
    EXPECT_EQ(stats.reference_vs_mpi, 0);
    EXPECT_EQ(stats.import_resized, 0);
}

}  // namespace
