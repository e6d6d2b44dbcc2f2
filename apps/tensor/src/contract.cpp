// Contraction planning (host code) and the library's instantiations of the contraction
// templates for double and Kokkos::complex<double>.
#include <kbuf_tensor/contract_impl.hpp>
#include <kbuf_tensor/network.hpp>

#include <sstream>

namespace kbuf_tensor {

std::string to_string(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < shape.rank; ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::string to_string(const Labels& labels) {
  std::string s;
  for (int i = 0; i < labels.rank; ++i) {
    if (i) s += ',';
    s += labels[i];
  }
  return s;
}

const char* to_string(TemporaryPolicy policy) noexcept {
  switch (policy) {
    case TemporaryPolicy::kbuf:
      return "kbuf";
    case TemporaryPolicy::fresh_views:
      return "View(noinit)";
    case TemporaryPolicy::fresh_views_initialized:
      return "View(init)";
  }
  return "?";
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names{"kbuf", "view-noinit", "view-init", "all"};
  return names;
}

std::vector<TemporaryPolicy> strategies_named(std::size_t i) {
  constexpr TemporaryPolicy all[] = {TemporaryPolicy::kbuf, TemporaryPolicy::fresh_views,
                                     TemporaryPolicy::fresh_views_initialized};
  KBUF_EXPECTS(i < strategy_names().size(), "kbuf_tensor::strategies_named(", i, "): there are ",
               strategy_names().size(), " strategy names");
  // The last name, "all": the three.
  return i + 1 == strategy_names().size() ? std::vector<TemporaryPolicy>(all, all + 3)
                                          : std::vector<TemporaryPolicy>{all[i]};
}

Labels Labels::parse(const char* list, const char* call) {
  KBUF_EXPECTS(list != nullptr, call, ": a label list is null");
  Labels labels;
  const std::string_view all(list);
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; };
  std::size_t pos = 0;
  bool any = false;
  for (char ch : all) any = any || !space(ch);
  if (!any) return labels;  // rank 0
  while (true) {
    const std::size_t comma = all.find(',', pos);
    std::string_view name =
        all.substr(pos, comma == std::string_view::npos ? all.npos : comma - pos);
    while (!name.empty() && space(name.front())) name.remove_prefix(1);
    while (!name.empty() && space(name.back())) name.remove_suffix(1);
    KBUF_EXPECTS(!name.empty(), call, ": empty index label in '", list, "'");
    KBUF_EXPECTS(labels.rank < max_rank, call, ": '", list, "' names more than ", max_rank,
                 " indices");
    KBUF_EXPECTS(labels.find(name) < 0, call, ": label '", name, "' repeated in '", list, "'");
    labels.names[static_cast<std::size_t>(labels.rank++)] = name;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return labels;
}

namespace Impl {

Shape permuted_shape(const Shape& s, const std::array<int, max_rank>& perm) {
  Shape out;
  out.rank = s.rank;
  for (int j = 0; j < s.rank; ++j) {
    const int p = perm[static_cast<std::size_t>(j)];
    KBUF_EXPECTS(p >= 0 && p < s.rank, "kbuf_tensor::permute_into: perm[", j, "] = ", p,
                 " is not a dimension of a rank-", s.rank, " tensor");
    out.extents[static_cast<std::size_t>(j)] = s[p];
  }
  return out;
}

std::array<int, max_rank> label_permutation(const char* dst_labels, const char* src_labels,
                                            const Shape& src_shape, const char* call) {
  const Labels dst = Labels::parse(dst_labels, call);
  const Labels src = Labels::parse(src_labels, call);
  KBUF_EXPECTS(src.rank == src_shape.rank, call, ": labels '", src_labels, "' name ", src.rank,
               " indices, the tensor has rank ", src_shape.rank);
  KBUF_EXPECTS(dst.rank == src.rank, call, ": '", dst_labels, "' is not a permutation of '",
               src_labels, "'");
  std::array<int, max_rank> perm{};
  for (int j = 0; j < dst.rank; ++j) {
    const int p = src.find(dst[j]);
    KBUF_EXPECTS(p >= 0, call, ": label '", dst[j], "' of '", dst_labels, "' is not in '",
                 src_labels, "'");
    perm[static_cast<std::size_t>(j)] = p;
  }
  return perm;
}

namespace {

// A short sequence of dimension numbers.
struct Seq {
  int n = 0;
  std::array<int, 2 * max_rank> v{};
  void push(int x) { v[static_cast<std::size_t>(n++)] = x; }
  int operator[](int i) const { return v[static_cast<std::size_t>(i)]; }
};

Seq concat(const Seq& x, const Seq& y) {
  Seq s = x;
  for (int i = 0; i < y.n; ++i) s.push(y[i]);
  return s;
}

bool operator==(const Seq& x, const Seq& y) {
  if (x.n != y.n) return false;
  for (int i = 0; i < x.n; ++i)
    if (x[i] != y[i]) return false;
  return true;
}

bool is_identity(const Seq& s) {
  for (int i = 0; i < s.n; ++i)
    if (s[i] != i) return false;
  return true;
}

std::array<int, max_rank> to_perm(const Seq& s) {
  std::array<int, max_rank> p{};
  for (int i = 0; i < s.n && i < max_rank; ++i) p[static_cast<std::size_t>(i)] = s[i];
  return p;
}

// How one GEMM operand is used: in place as 'N', 'T' or 'C', or permuted into `block_order`.
struct OperandUse {
  bool permute = false;
  char op = 'N';
  Seq order;
};

// `natural`: the operand's dimensions in the order the GEMM reads them without transposing
// (rows then summed for the left operand, summed then columns for the right one); `transposed`:
// the other block order.
OperandUse use_operand(const Seq& natural, const Seq& transposed, bool conj) {
  OperandUse u;
  u.order = natural;
  if (!conj && is_identity(natural)) {
    u.op = 'N';
  } else if (is_identity(transposed)) {
    u.op = conj ? 'C' : 'T';
  } else {
    u.permute = true;  // the permute applies the conjugation, so the GEMM reads it as 'N'
    u.op = 'N';
  }
  return u;
}

}  // namespace
}  // namespace Impl

ContractionPlan plan_contraction(const Shape& a, const char* a_labels, const Shape& b,
                                 const char* b_labels, const char* c_labels, Conj conj) {
  using Impl::Seq;
  static constexpr const char* call = "kbuf_tensor::contract";
  const Labels la = Labels::parse(a_labels, call);
  const Labels lb = Labels::parse(b_labels, call);
  const Labels lc = Labels::parse(c_labels, call);
  KBUF_EXPECTS(la.rank == a.rank, call, ": labels '", a_labels, "' name ", la.rank,
               " indices, A has rank ", a.rank);
  KBUF_EXPECTS(lb.rank == b.rank, call, ": labels '", b_labels, "' name ", lb.rank,
               " indices, B has rank ", b.rank);

  std::array<int, max_rank> a_in_b{}, a_in_c{}, b_in_a{}, b_in_c{}, c_in_a{}, c_in_b{};
  for (int i = 0; i < la.rank; ++i) {
    const auto s = static_cast<std::size_t>(i);
    a_in_b[s] = lb.find(la[i]);
    a_in_c[s] = lc.find(la[i]);
    KBUF_EXPECTS(a_in_b[s] < 0 || a_in_c[s] < 0, call, ": label '", la[i],
                 "' appears in A, B and C ('", a_labels, "', '", b_labels, "', '", c_labels,
                 "'); batch indices are not supported");
    KBUF_EXPECTS(a_in_b[s] >= 0 || a_in_c[s] >= 0, call, ": label '", la[i], "' of A ('", a_labels,
                 "') appears in neither B ('", b_labels, "') nor C ('", c_labels,
                 "'); traces are not supported");
    if (a_in_b[s] >= 0) {
      KBUF_EXPECTS(a[i] == b[a_in_b[s]], call, ": summed label '", la[i], "' has extent ", a[i],
                   " in A but ", b[a_in_b[s]], " in B");
    }
  }
  for (int j = 0; j < lb.rank; ++j) {
    const auto s = static_cast<std::size_t>(j);
    b_in_a[s] = la.find(lb[j]);
    b_in_c[s] = lc.find(lb[j]);
    KBUF_EXPECTS(b_in_a[s] >= 0 || b_in_c[s] >= 0, call, ": label '", lb[j], "' of B ('", b_labels,
                 "') appears in neither A ('", a_labels, "') nor C ('", c_labels,
                 "'); traces are not supported");
  }
  ContractionPlan plan;
  plan.a = a;
  plan.b = b;
  plan.c.rank = lc.rank;
  for (int l = 0; l < lc.rank; ++l) {
    const auto s = static_cast<std::size_t>(l);
    c_in_a[s] = la.find(lc[l]);
    c_in_b[s] = lb.find(lc[l]);
    KBUF_EXPECTS(c_in_a[s] >= 0 || c_in_b[s] >= 0, call, ": output label '", lc[l], "' of '",
                 c_labels, "' appears in neither A ('", a_labels, "') nor B ('", b_labels, "')");
    plan.c.extents[s] = c_in_a[s] >= 0 ? a[c_in_a[s]] : b[c_in_b[s]];
  }

  // Free indices of A in A's and in C's order, of B likewise; summed ones in A's and B's order.
  Seq fa_a, fa_c, fb_b, fb_c, k_a_in_a, k_a_in_b, k_b_in_a, k_b_in_b;
  for (int i = 0; i < la.rank; ++i) {
    if (a_in_c[static_cast<std::size_t>(i)] >= 0) {
      fa_a.push(i);
    } else {
      k_a_in_a.push(i);
      k_a_in_b.push(a_in_b[static_cast<std::size_t>(i)]);
    }
  }
  for (int j = 0; j < lb.rank; ++j) {
    if (b_in_c[static_cast<std::size_t>(j)] >= 0) {
      fb_b.push(j);
    } else {
      k_b_in_a.push(b_in_a[static_cast<std::size_t>(j)]);
      k_b_in_b.push(j);
    }
  }
  for (int l = 0; l < lc.rank; ++l) {
    if (c_in_a[static_cast<std::size_t>(l)] >= 0) fa_c.push(c_in_a[static_cast<std::size_t>(l)]);
    if (c_in_b[static_cast<std::size_t>(l)] >= 0) fb_c.push(c_in_b[static_cast<std::size_t>(l)]);
  }

  const bool ca = conj_of_a(conj), cb = conj_of_b(conj);
  const Seq* fa_choices[2] = {&fa_c, &fa_a};
  const Seq* fb_choices[2] = {&fb_c, &fb_b};
  const Seq* ka_choices[2] = {&k_a_in_a, &k_b_in_a};
  const Seq* kb_choices[2] = {&k_a_in_b, &k_b_in_b};

  // Distinct choices only; the search stops at the first plan that permutes nothing (and is
  // not taller than wide).
  const int n_fa = fa_c == fa_a ? 1 : 2;
  const int n_fb = fb_c == fb_b ? 1 : 2;
  const int n_k = k_a_in_a == k_b_in_a ? 1 : 2;
  std::size_t best_cost = 0;
  bool have_best = false;
  bool best_narrow = false;
  auto searching = [&] { return !(have_best && best_cost == 0 && !best_narrow); };
  for (int orient = 0; orient < 2 && searching(); ++orient) {
    for (int ifa = 0; ifa < n_fa && searching(); ++ifa) {
      for (int ifb = 0; ifb < n_fb && searching(); ++ifb) {
        for (int ik = 0; ik < n_k && searching(); ++ik) {
          const Seq& fa = *fa_choices[ifa];
          const Seq& fb = *fb_choices[ifb];
          const Seq& ka = *ka_choices[ik];
          const Seq& kb = *kb_choices[ik];
          // orient 0: C(fa, fb) = A(fa, k) B(k, fb); orient 1: C(fb, fa) = B(fb, k) A(k, fa).
          const Impl::OperandUse ua = orient == 0
                                          ? Impl::use_operand(concat(fa, ka), concat(ka, fa), ca)
                                          : Impl::use_operand(concat(ka, fa), concat(fa, ka), ca);
          const Impl::OperandUse ub = orient == 0
                                          ? Impl::use_operand(concat(kb, fb), concat(fb, kb), cb)
                                          : Impl::use_operand(concat(fb, kb), concat(kb, fb), cb);
          // The product's dimensions (rows then columns) as positions in C.
          Seq out;
          Shape product;
          const Seq& rows = orient == 0 ? fa : fb;
          const Seq& cols = orient == 0 ? fb : fa;
          const auto& rows_in_c = orient == 0 ? a_in_c : b_in_c;
          const auto& cols_in_c = orient == 0 ? b_in_c : a_in_c;
          const Shape& rows_shape = orient == 0 ? a : b;
          const Shape& cols_shape = orient == 0 ? b : a;
          for (int t = 0; t < rows.n; ++t) {
            out.push(rows_in_c[static_cast<std::size_t>(rows[t])]);
            product.extents[static_cast<std::size_t>(product.rank++)] = rows_shape[rows[t]];
          }
          for (int t = 0; t < cols.n; ++t) {
            out.push(cols_in_c[static_cast<std::size_t>(cols[t])]);
            product.extents[static_cast<std::size_t>(product.rank++)] = cols_shape[cols[t]];
          }
          const bool permute_c = !Impl::is_identity(out);
          const std::size_t cost = (ua.permute ? a.size() : 0) + (ub.permute ? b.size() : 0) +
                                   (permute_c ? plan.c.size() : 0);
          std::size_t m = 1, n = 1, k = 1;
          for (int t = 0; t < rows.n; ++t) m *= rows_shape[rows[t]];
          for (int t = 0; t < cols.n; ++t) n *= cols_shape[cols[t]];
          for (int t = 0; t < ka.n; ++t) k *= a[ka[t]];
          // Between equal costs prefer a product at least as wide as it is tall: the wide
          // side is contiguous in row-major C, and blocked GEMM kernels (Kokkos Kernels' own
          // tiles 24 rows by 64 columns) waste less on a short wide product than a tall one.
          const bool narrow = m > n;
          if (have_best && (cost > best_cost || (cost == best_cost && !(best_narrow && !narrow)))) {
            continue;
          }
          have_best = true;
          best_cost = cost;
          best_narrow = narrow;

          plan.swap = orient == 1;
          plan.permute_a = ua.permute;
          plan.permute_b = ub.permute;
          plan.permute_c = permute_c;
          plan.op_a = ua.op;
          plan.op_b = ub.op;
          plan.conj_a = ca;
          plan.conj_b = cb;
          plan.perm_a = Impl::to_perm(ua.order);
          plan.perm_b = Impl::to_perm(ub.order);
          plan.product = product;
          plan.perm_c = {};
          for (int t = 0; t < out.n; ++t) plan.perm_c[static_cast<std::size_t>(out[t])] = t;
          plan.m = m;
          plan.n = n;
          plan.k = k;
        }
      }
    }
  }
  return plan;
}

KBUF_TENSOR_DECLARE(, double, default_memory_space)
KBUF_TENSOR_DECLARE(, Kokkos::complex<double>, default_memory_space)

}  // namespace kbuf_tensor
