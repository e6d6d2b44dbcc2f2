// A Kokkos application this project did not write, for kbuf-advisor to look at: implicit time
// steps of the heat equation on a 2-D grid, each a Belos GMRES solve with an Ifpack2 ILU(0)
// preconditioner of the Tpetra matrix I + dt L (L: the 5-point Laplacian), with Debian's Trilinos
// 13.2. Every allocation it makes is Trilinos' own; kbuf is not used. Each time step is a Kokkos
// profiling region ("time step"), as applications mark theirs.
//   kbuf-advisor-peer [GRID] [STEPS]     (default 100 x 100, 10 steps)
#include <BelosBlockGmresSolMgr.hpp>
#include <BelosLinearProblem.hpp>
#include <BelosTpetraAdapter.hpp>
#include <Ifpack2_Factory.hpp>
#include <Kokkos_Core.hpp>
#include <Teuchos_ParameterList.hpp>
#include <Tpetra_Core.hpp>
#include <Tpetra_CrsMatrix.hpp>
#include <Tpetra_MultiVector.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
using SC = double;
using map_type = Tpetra::Map<>;
using LO = map_type::local_ordinal_type;
using GO = map_type::global_ordinal_type;
using crs_type = Tpetra::CrsMatrix<SC>;
using row_type = Tpetra::RowMatrix<SC>;
using MV = Tpetra::MultiVector<SC>;
using OP = Tpetra::Operator<SC>;
}  // namespace

int main(int argc, char** argv) {
  const GO n = argc > 1 ? std::atol(argv[1]) : 100;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (n < 2 || steps < 1) {
    std::fprintf(stderr, "usage: %s [GRID >= 2] [STEPS >= 1]\n", argv[0]);
    return 2;
  }
  Tpetra::ScopeGuard tpetra(&argc, &argv);  // MPI and Kokkos
  int status = 0;
  {
    const auto comm = Tpetra::getDefaultComm();
    const auto map = Teuchos::rcp(new map_type(n * n, 0, comm));
    const double dt = 1e-3, h = 1.0 / static_cast<double>(n + 1), c = dt / (h * h);
    const auto A = Teuchos::rcp(new crs_type(map, 5));
    for (LO lid = 0; lid < static_cast<LO>(map->getNodeNumElements()); ++lid) {
      const GO g = map->getGlobalElement(lid), i = g % n, j = g / n;
      std::vector<GO> cols{g};
      std::vector<SC> vals{1 + 4 * c};
      if (i > 0) cols.push_back(g - 1), vals.push_back(-c);
      if (i + 1 < n) cols.push_back(g + 1), vals.push_back(-c);
      if (j > 0) cols.push_back(g - n), vals.push_back(-c);
      if (j + 1 < n) cols.push_back(g + n), vals.push_back(-c);
      A->insertGlobalValues(g, Teuchos::ArrayView<const GO>(cols),
                            Teuchos::ArrayView<const SC>(vals));
    }
    A->fillComplete();

    Ifpack2::Factory factory;
    const auto prec = factory.create<row_type>("RILUK", A);
    Teuchos::ParameterList ilu;
    ilu.set("fact: iluk level-of-fill", 0);
    prec->setParameters(ilu);
    prec->initialize();
    prec->compute();

    // A hot square in the middle of a cold plate.
    const auto u = Teuchos::rcp(new MV(map, 1));
    {
      auto data = u->getLocalViewHost(Tpetra::Access::OverwriteAll);
      for (LO lid = 0; lid < static_cast<LO>(map->getNodeNumElements()); ++lid) {
        const GO g = map->getGlobalElement(lid), i = g % n, j = g / n;
        data(lid, 0) = (4 * i > n && 4 * i < 3 * n && 4 * j > n && 4 * j < 3 * n) ? 1.0 : 0.0;
      }
    }
    const auto params = Teuchos::rcp(new Teuchos::ParameterList());
    params->set("Convergence Tolerance", 1e-10);
    params->set("Maximum Iterations", 200);
    params->set("Num Blocks", 30);
    int iterations = 0;
    for (int step = 0; step < steps; ++step) {
      Kokkos::Profiling::pushRegion("time step");
      const auto b = Teuchos::rcp(new MV(*u, Teuchos::Copy));
      const auto problem = Teuchos::rcp(new Belos::LinearProblem<SC, MV, OP>(A, u, b));
      problem->setRightPrec(prec);
      problem->setProblem();
      Belos::BlockGmresSolMgr<SC, MV, OP> solver(problem, params);
      if (solver.solve() != Belos::Converged) status = 1;
      iterations += solver.getNumIters();
      Kokkos::Profiling::popRegion();
    }
    std::vector<SC> norm(1);
    u->norm2(Teuchos::ArrayView<SC>(norm));
    if (comm->getRank() == 0) {
      std::printf(
          "heat equation %lld x %lld, %d implicit steps: %d GMRES iterations, |u| = %.6e%s\n",
          static_cast<long long>(n), static_cast<long long>(n), steps, iterations, norm[0],
          status == 0 ? "" : " (a solve did not converge)");
    }
  }
  return status;
}
