// Pairwise contractions (permute + GEMM + permute) against the naive loop reference.
#include <doctest/doctest.h>

#include "tensor_test_support.hpp"

using namespace kbuf_tensor_test;

namespace {

const Conj all_conj[] = {Conj::none, Conj::a, Conj::b, Conj::both};

// max relative error of contract() against reference_contract() for one label assignment.
template <class T>
double contract_error(Tmp& tmp, const std::string& lc, const HostTensor<T>& ha,
                      const Tensor<T, space>& a, const std::string& la, const HostTensor<T>& hb,
                      const Tensor<T, space>& b, const std::string& lb, Conj conj) {
  auto scope = tmp.scope();
  const auto c = contract(tmp, lc.c_str(), a, la.c_str(), b, lb.c_str(), conj);
  const auto ref = reference_contract(lc.c_str(), ha, la.c_str(), hb, lb.c_str(), conj);
  return relative_error(to_host(c), ref);
}

// Every ordering of A's, B's and C's labels (and every conjugation) against the reference.
template <class T>
void check_all_orders(const std::vector<std::string>& a_names,
                      const std::vector<std::string>& b_names,
                      const std::vector<std::string>& c_names,
                      const std::map<std::string, std::size_t>& ext) {
  Alloc alloc;
  Tmp tmp(alloc);
  std::uint64_t seed = 7;
  for (const auto& la : orderings(a_names)) {
    const auto ha = random_labelled<T>(la, ext, ++seed);
    const auto a = to_device<T, space>(ha, "A");
    for (const auto& lb : orderings(b_names)) {
      const auto hb = random_labelled<T>(lb, ext, ++seed);
      const auto b = to_device<T, space>(hb, "B");
      for (const auto& lc : orderings(c_names)) {
        for (Conj conj : all_conj) {
          CAPTURE(la);
          CAPTURE(lb);
          CAPTURE(lc);
          CAPTURE(static_cast<int>(conj));
          CHECK(contract_error(tmp, lc, ha, a, la, hb, b, lb, conj) < 1e-13);
        }
      }
    }
  }
  CHECK(alloc.empty());
}

}  // namespace

TEST_CASE_TEMPLATE(
    "rank-3 x rank-3 contractions over one index match the naive loops in every "
    "operand and output order",
    T, double, Kokkos::complex<double>) {
  const std::map<std::string, std::size_t> ext{{"i", 2}, {"j", 3}, {"k", 4}, {"l", 5}, {"m", 6}};
  check_all_orders<T>({"i", "j", "k"}, {"k", "l", "m"}, {"i", "j", "l", "m"}, ext);
}

TEST_CASE_TEMPLATE("rank-4 x rank-2 contractions match the naive loops in every order", T, double,
                   Kokkos::complex<double>) {
  const std::map<std::string, std::size_t> ext{{"i", 2}, {"j", 3}, {"k", 4}, {"l", 5}, {"m", 3}};
  SUBCASE("one summed index") {
    check_all_orders<T>({"i", "j", "k", "l"}, {"k", "m"}, {"i", "j", "l", "m"}, ext);
  }
  SUBCASE("two summed indices") {
    check_all_orders<T>({"i", "j", "k", "l"}, {"k", "l"}, {"i", "j"}, ext);
  }
}

TEST_CASE_TEMPLATE(
    "a matrix product in GEMM order needs no permute and no temporary besides the "
    "result",
    T, double, Kokkos::complex<double>) {
  const std::map<std::string, std::size_t> ext{{"i", 3}, {"j", 5}, {"k", 4}, {"l", 2}, {"m", 3}};
  Alloc alloc;
  Tmp tmp(alloc);

  struct Case {
    const char* c;
    const char* a;
    const char* b;
    int permutes;
  };
  const Case cases[] = {
      {"i,j", "i,k", "k,j", 0},      // N N
      {"i,j", "k,i", "k,j", 0},      // T N
      {"i,j", "i,k", "j,k", 0},      // N T
      {"j,i", "i,k", "k,j", 0},      // C^T = B^T A^T: both transposed, no output permute
      {"i,j,l", "i,k", "k,j,l", 0},  // B is a (k | j l) matrix
      {"i,m", "i,k,l", "k,m,l", 1},  // B must be permuted into (k l | m)
      {"m,i", "i,k,l", "l,m,k", 1},  // A used as is; B permuted
      {"i,m,j", "i,k,j", "k,m", 2},  // A permuted, and the product (i j | m) permuted into C
  };
  std::uint64_t seed = 100;
  for (const Case& cs : cases) {
    CAPTURE(cs.c);
    CAPTURE(cs.a);
    CAPTURE(cs.b);
    const auto ha = random_labelled<T>(cs.a, ext, ++seed);
    const auto hb = random_labelled<T>(cs.b, ext, ++seed);
    const auto a = to_device<T, space>(ha, "A");
    const auto b = to_device<T, space>(hb, "B");
    const ContractionPlan plan = plan_contraction(a.shape, cs.a, b.shape, cs.b, cs.c);
    CHECK(plan.permutes() == cs.permutes);

    const std::size_t before = tmp.count();
    const auto stats_before = alloc.statistics();
    double err = 0;
    {
      auto scope = tmp.scope();
      const auto c = contract(tmp, cs.c, a, cs.a, b, cs.b);
      err = relative_error(to_host(c), reference_contract(cs.c, ha, cs.a, hb, cs.b));
    }
    CHECK(err < 1e-13);
    CHECK(tmp.count() - before == static_cast<std::size_t>(1 + cs.permutes));
    CHECK(alloc.statistics().temporaries + alloc.statistics().fallbacks - stats_before.temporaries -
              stats_before.fallbacks ==
          static_cast<std::size_t>(1 + cs.permutes));
  }
  CHECK(alloc.empty());
}

TEST_CASE("a conjugated operand uses GEMM's 'C' in place of a permute where it can") {
  using T = Kokkos::complex<double>;
  const Shape a{3, 4}, b{3, 5};
  // C[i,j] = conj(A)[k,i] B[k,j]: A is read as 'C' (conjugate transpose), no permute.
  ContractionPlan p = plan_contraction(a, "k,i", b, "k,j", "i,j", Conj::a);
  CHECK(p.permutes() == 0);
  CHECK(!p.swap);
  CHECK(p.op_a == 'C');
  // C[i,j] = conj(A)[i,k] B[k,j]: 'N' cannot conjugate, so A is permuted (conjugating); the
  // alternative, the transposed product with A as a 'C' operand, would permute the larger C.
  p = plan_contraction(Shape{4, 3}, "i,k", Shape{3, 5}, "k,j", "i,j", Conj::a);
  CHECK(p.conj_a);
  CHECK(p.permute_a);
  CHECK(p.op_a == 'N');
  CHECK(!p.permute_c);

  Alloc alloc;
  Tmp tmp(alloc);
  const auto ha = random_host_tensor<T>({4, 3}, 1);
  const auto hb = random_host_tensor<T>({3, 5}, 2);
  const auto da = to_device<T, space>(ha, "A");
  const auto db = to_device<T, space>(hb, "B");
  auto scope = tmp.scope();
  const auto c = contract(tmp, "i,j", da, "i,k", db, "k,j", Conj::a);
  CHECK(relative_error(to_host(c), reference_contract("i,j", ha, "i,k", hb, "k,j", Conj::a)) <
        1e-14);
}

TEST_CASE_TEMPLATE("a full contraction gives a rank-0 tensor and an outer product needs no sum", T,
                   double, Kokkos::complex<double>) {
  const std::map<std::string, std::size_t> ext{{"i", 3}, {"j", 4}, {"k", 2}};
  Alloc alloc;
  Tmp tmp(alloc);
  const auto ha = random_labelled<T>("i,j,k", ext, 1);
  const auto hb = random_labelled<T>("i,j,k", ext, 2);
  const auto a = to_device<T, space>(ha, "A");
  const auto b = to_device<T, space>(hb, "B");
  {
    const ContractionPlan plan = plan_contraction(a.shape, "i,j,k", b.shape, "i,j,k", "", Conj::a);
    CHECK(plan.permutes() == 0);
    CHECK(plan.m == 1);
    CHECK(plan.n == 1);
    CHECK(plan.k == 24);
    for (Conj conj : all_conj) {  // dot product (x^H y or y^H x) or GEMM fallback
      CAPTURE(static_cast<int>(conj));
      auto scope = tmp.scope();
      const auto c = contract(tmp, "", a, "i,j,k", b, "i,j,k", conj);
      CHECK(c.rank() == 0);
      CHECK(c.size() == 1);
      CHECK(relative_error(to_host(c), reference_contract("", ha, "i,j,k", hb, "i,j,k", conj)) <
            1e-14);
      // The same with B's indices in another order: B is permuted first.
      const auto hbp = random_labelled<T>("k,i,j", ext, 3);
      const auto bp = to_device<T, space>(hbp, "B'");
      const auto cp = contract(tmp, "", a, "i,j,k", bp, "k,i,j", conj);
      CHECK(relative_error(to_host(cp), reference_contract("", ha, "i,j,k", hbp, "k,i,j", conj)) <
            1e-14);
    }
  }
  {
    const ContractionPlan plan =
        plan_contraction(a.shape, "i,j,k", b.shape, "l,m,n", "i,j,k,l,m,n");
    CHECK(plan.permutes() == 0);
    CHECK(plan.k == 1);
    auto scope = tmp.scope();
    const auto c = contract(tmp, "k,n,i,l,j,m", a, "i,j,k", b, "l,m,n");
    CHECK(c.shape == Shape{2, 2, 3, 3, 4, 4});
    CHECK(relative_error(to_host(c), reference_contract("k,n,i,l,j,m", ha, "i,j,k", hb, "l,m,n")) <
          1e-14);
  }
  CHECK(alloc.empty());
}

TEST_CASE_TEMPLATE("permute_into reorders every index and conjugates on request", T, double,
                   Kokkos::complex<double>) {
  const auto h = random_host_tensor<T>({2, 3, 4, 5}, 3);
  const auto src = to_device<T, space>(h, "src");
  const auto dst = make_tensor<T, space>("dst", {4, 2, 5, 3});
  for (bool conj : {false, true}) {
    permute_into(dst, "k,i,l,j", src, "i,j,k,l", conj);
    const auto out = to_host(dst);
    int bad = 0;
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 4; ++k)
          for (std::size_t l = 0; l < 5; ++l) {
            const T x = h.data[((i * 3 + j) * 4 + k) * 5 + l];
            const T y = out.data[((k * 2 + i) * 5 + l) * 3 + j];
            if (!(y == (conj ? conjugate(x) : x))) ++bad;
          }
    CHECK(bad == 0);
  }
  CHECK_THROWS_AS(permute_into(dst, "k,i,l,x", src, "i,j,k,l"), kbuf::logic_error);
  CHECK_THROWS_AS(permute_into(src, "i,j,k,l", src, "i,j,l,k"), kbuf::logic_error);  // shape
}

TEST_CASE("bad labels throw kbuf::logic_error naming the call and allocate nothing") {
  using T = double;
  Alloc alloc;
  Tmp tmp(alloc);
  const auto a = make_tensor<T, space>("A", {2, 3});
  const auto b = make_tensor<T, space>("B", {3, 4});
  auto bad = [&](const char* lc, const char* la, const char* lb) {
    CAPTURE(lc);
    CAPTURE(la);
    CAPTURE(lb);
    bool threw = false;
    try {
      (void)contract(tmp, lc, a, la, b, lb);
    } catch (const kbuf::logic_error& e) {
      threw = std::string(e.what()).find("kbuf_tensor::contract") != std::string::npos;
    }
    CHECK(threw);
  };
  bad("i,j", "i", "k,j");              // A has rank 2
  bad("i,j", "i,k", "k,j,l");          // B has rank 2
  bad("i,j", "i,i", "i,j");            // repeated label
  bad("i,k,j", "i,k", "k,j");          // k in A, B and C: a batch index
  bad("i", "i,k", "k,j");              // j only in B
  bad("i,j,x", "i,k", "k,j");          // x in neither operand
  bad("i,j", "i,k", "j,k");            // summed k: extent 3 in A, 4 in B
  bad("i,j", "i,,k", "k,j");           // empty label
  bad("a,b,c,d,e,f,g", "i,k", "k,j");  // too many labels
  CHECK(tmp.count() == 0);
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 0);

  const auto wrong = make_tensor<T, space>("C", {2, 5});
  CHECK_THROWS_AS(contract_into(tmp, wrong, "i,j", a, "i,k", b, "k,j"), kbuf::logic_error);
  CHECK(tmp.count() == 0);
  CHECK_THROWS_AS(static_cast<void>(Tmp(TemporaryPolicy::kbuf)), kbuf::logic_error);
}
