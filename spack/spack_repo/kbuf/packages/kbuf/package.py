# Copyright kbuf contributors.
#
# SPDX-License-Identifier: BSD-3-Clause

import ctypes
import glob
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage
from spack_repo.builtin.build_systems.rocm import ROCmPackage
from spack_repo.builtin.packages.kokkos.package import Kokkos

from spack.package import *



def _arch_conditions(arch_map):
    """{arch: (Kokkos architecture name, version condition or None)} from one of the Kokkos
    recipe's architecture maps. Older recipes map to the name alone; current ones map to
    (name, condition), e.g. "35": ("kepler35", "@:4"): the Kokkos versions that know the arch."""
    result = {}
    for arch, value in arch_map.items():
        if isinstance(value, (tuple, list)):
            result[arch] = (value[0], value[1] if len(value) > 1 else None)
        else:
            result[arch] = (value, None)
    return result


# GPU architectures the Kokkos recipe can build for. Kokkos builds for exactly one architecture,
# and kbuf's CUDA/HIP code is compiled against that Kokkos, so kbuf takes exactly one as well.
_KOKKOS_CUDA_ARCH_CONDITIONS = _arch_conditions(Kokkos.spack_cuda_arch_map)
_KOKKOS_AMDGPU_TARGET_CONDITIONS = _arch_conditions(Kokkos.amdgpu_arch_map)
_KOKKOS_CUDA_ARCHES = tuple(_KOKKOS_CUDA_ARCH_CONDITIONS)
_KOKKOS_AMDGPU_TARGETS = tuple(_KOKKOS_AMDGPU_TARGET_CONDITIONS)


class Kbuf(CMakePackage, CudaPackage, ROCmPackage):
    """kbuf: a buffer allocator for the temporaries of Kokkos applications (a compiled core,
    libkbuf, and headers for the API and the hot path).

    Short-lived scratch views are carved out of one pre-allocated Kokkos buffer."""

    homepage = "https://git.example.org/your-org/kbuf"
    git = "https://git.example.org/your-org/kbuf.git"

    license("BSD-3-Clause")

    version("main", branch="main")

    # The stand-alone test compiles a small CMake project against the installed kbuf.
    test_requires_compiler = True

    variant(
        "kernels",
        default=False,
        description="Build the Kokkos Kernels tensor-contraction workload library, "
        "the kbuf-demo executable and the end-to-end benchmark (needs Kokkos Kernels)",
    )
    variant("benchmarks", default=False, description="Build kbuf's benchmarks")
    variant(
        "shared",
        default=True,
        description="Build libkbuf as a shared library (KBUF_SHARED; needs a shared Kokkos): one "
        "registry of current allocators and saved sizes per process",
    )
    variant(
        "advisor",
        default=True,
        description="Build and install kbuf-advisor, the Kokkos Tools library "
        "lib/libkbuf-advisor.so (KBUF_ENABLE_ADVISOR; needs nlohmann-json)",
    )
    variant(
        "mpi",
        default=False,
        description="Build with MPI (KBUF_ENABLE_MPI): kbuf-tebd over MPI ranks and, with "
        "--test, the MPI tests (kbuf/mpi.hpp is installed either way)",
    )

    # Kokkos accepts exactly one GPU architecture, so the multi-valued cuda_arch/amdgpu_target
    # variants of CudaPackage/ROCmPackage are redefined here as single-valued, like Kokkos does.
    variant(
        "cuda_arch",
        description="CUDA architecture (exactly one: the one Kokkos is built for)",
        values=("none",) + CudaPackage.cuda_arch_values,
        default="none",
        multi=False,
        sticky=True,
        when="+cuda",
    )
    variant(
        "amdgpu_target",
        description="AMD GPU architecture (exactly one: the one Kokkos is built for)",
        values=("none",) + ROCmPackage.amdgpu_targets,
        default="none",
        multi=False,
        sticky=True,
        when="+rocm",
    )

    conflicts(
        "+cuda",
        when="+rocm",
        msg="kbuf is built for one device backend: choose +cuda or +rocm, not both",
    )
    conflicts(
        "+cuda",
        when="cuda_arch=none",
        msg="kbuf+cuda needs exactly one CUDA architecture, e.g. 'kbuf+cuda cuda_arch=90' "
        "(Kokkos is built for a single GPU architecture)",
    )
    conflicts(
        "+rocm",
        when="amdgpu_target=none",
        msg="kbuf+rocm needs exactly one AMD GPU target, e.g. 'kbuf+rocm amdgpu_target=gfx90a' "
        "(Kokkos is built for a single GPU architecture)",
    )
    for _arch in CudaPackage.cuda_arch_values:
        if _arch not in _KOKKOS_CUDA_ARCHES:
            conflicts(
                f"cuda_arch={_arch}",
                when="+cuda",
                msg=f"Kokkos cannot be built for cuda_arch={_arch}; supported CUDA "
                f"architectures: {', '.join(_KOKKOS_CUDA_ARCHES)}",
            )
    for _arch in ROCmPackage.amdgpu_targets:
        if _arch not in _KOKKOS_AMDGPU_TARGETS:
            conflicts(
                f"amdgpu_target={_arch}",
                when="+rocm",
                msg=f"Kokkos cannot be built for amdgpu_target={_arch}; supported AMD GPU "
                f"targets: {', '.join(_KOKKOS_AMDGPU_TARGETS)}",
            )

    depends_on("cxx", type="build")
    depends_on("cmake@3.16:", type="build")

    # kbuf's CMake does find_package(Kokkos 3.4); Kokkos' CMake config must be usable from C++17.
    depends_on("kokkos@3.4.01:")
    # A shared libkbuf links Kokkos' own shared libraries; over a static Kokkos it would carry a
    # copy of Kokkos of its own (kbuf's CMake refuses that).
    depends_on("kokkos+shared", when="+shared")
    # (cxxstd=11 is refused by the Kokkos recipe itself; 14 is still possible for Kokkos 3.)
    conflicts("^kokkos cxxstd=14", msg="kbuf needs C++17: build Kokkos with cxxstd=17 or newer")

    # Compilers Kokkos 5 refuses or miscompiles. kbuf instantiates Kokkos' View templates in its
    # own code, so kbuf's C++ compiler matters as much as the one Kokkos was built with.
    # Kokkos 5 builds its View on mdspan and needs C++20 (its recipe only offers cxxstd=20/23).
    conflicts(
        "%gcc@:10.3",
        when="^kokkos@5:",
        msg="Kokkos 5 needs C++20 and GCC 10.4 or newer; use an older Kokkos (^kokkos@:4) or a "
        "newer compiler",
    )
    conflicts(
        "%llvm@:13",
        when="^kokkos@5:",
        msg="Kokkos 5 needs C++20 and Clang 14 or newer; use an older Kokkos or a newer compiler",
    )
    # GCC 12.5 with Kokkos 5.0 to 5.1.1 crashes destroying default-constructed managed Views
    # (fixed in Kokkos by pull request 9262). kbuf's allocator holds such a View (its buffer).
    conflicts(
        "%gcc@12.5",
        when="^kokkos@5.0.0:5.1.1",
        msg="GCC 12.5 with Kokkos 5.0 to 5.1.1 crashes destroying default-constructed managed "
        "Views (Kokkos pull request 9262): use another GCC or another Kokkos version",
    )
    conflicts(
        "^kokkos@5.0.0:5.1.1 %gcc@12.5",
        msg="Kokkos 5.0 to 5.1.1 built with GCC 12.5 crashes destroying default-constructed "
        "managed Views (Kokkos pull request 9262): build Kokkos with another compiler",
    )

    # The Spack variants select KBUF_BACKEND, and Kokkos must provide exactly that backend:
    #  - Serial (neither +cuda nor +rocm): a host-only Kokkos. A CUDA/HIP Kokkos cannot be
    #    compiled by the plain host compiler, so it is not silently accepted here; ask for
    #    kbuf+cuda / kbuf+rocm instead.
    #  - CUDA: Kokkos+cuda for the same single cuda_arch, compiled through nvcc_wrapper.
    #  - HIP: Kokkos+rocm for the same single amdgpu_target, compiled with hipcc.
    depends_on("kokkos~cuda~rocm", when="~cuda~rocm")
    for _arch in _KOKKOS_CUDA_ARCHES:
        depends_on(f"kokkos+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    for _arch in _KOKKOS_AMDGPU_TARGETS:
        depends_on(f"kokkos+rocm amdgpu_target={_arch}", when=f"+rocm amdgpu_target={_arch}")
    # Kokkos knows some architectures only in some versions (the conditions of its arch maps:
    # Kepler only before 5, Blackwell 103/121 and gfx950 only from 5.1, ...). It checks them when
    # it builds; forwarded here, an impossible pair is refused at concretization instead.
    for _arch, (_name, _cond) in _KOKKOS_CUDA_ARCH_CONDITIONS.items():
        if _cond:
            requires(
                f"^kokkos{_cond}",
                when=f"+cuda cuda_arch={_arch}",
                msg=f"Kokkos builds for cuda_arch={_arch} ({_name}) only in versions {_cond}",
            )
    for _arch, (_name, _cond) in _KOKKOS_AMDGPU_TARGET_CONDITIONS.items():
        if _cond:
            requires(
                f"^kokkos{_cond}",
                when=f"+rocm amdgpu_target={_arch}",
                msg=f"Kokkos builds for amdgpu_target={_arch} ({_name}) only in versions {_cond}",
            )
    # kbuf launches device lambdas; Kokkos 5 always enables them (the variant is gone there).
    requires(
        "^kokkos+cuda_lambda",
        when="+cuda ^kokkos@:4",
        msg="kbuf+cuda launches device lambdas: Kokkos 4 and older need kokkos+cuda_lambda",
    )
    requires(
        "^kokkos+wrapper",
        when="+cuda",
        msg="kbuf+cuda compiles Kokkos code through nvcc_wrapper: it needs kokkos+wrapper",
    )
    conflicts(
        "^kokkos+cmake_lang",
        msg="kbuf compiles Kokkos code as C++ (nvcc_wrapper or hipcc); "
        "Kokkos built with +cmake_lang is not supported",
    )
    conflicts("^kokkos+sycl", msg="kbuf supports the Serial, CUDA and HIP backends of Kokkos only")
    conflicts(
        "^kokkos+openmptarget",
        msg="kbuf supports the Serial, CUDA and HIP backends of Kokkos only",
    )

    # Kokkos Kernels shares kbuf's Kokkos; with CUDA it is built for the same architecture.
    with when("+kernels"):
        # kbuf-tebd's SVDs (find_package(LAPACK) in apps/tebd)
        depends_on("lapack")
        depends_on("kokkos-kernels")
        depends_on("kokkos-kernels~cuda", when="~cuda")
        for _arch in _KOKKOS_CUDA_ARCHES:
            depends_on(f"kokkos-kernels+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")

    # kbuf-advisor writes its JSON with nlohmann-json (find_package(nlohmann_json) in apps/advisor)
    depends_on("nlohmann-json@3.9:", when="+advisor")

    # find_package(MPI COMPONENTS CXX) with KBUF_ENABLE_MPI
    depends_on("mpi", when="+mpi")

    # tests/CMakeLists.txt does find_package(doctest 2.4); only needed with --test
    depends_on("doctest@2.4:", type="test")

    # The install-test consumer project, copied at install time for `spack test run`.
    consumer_src = join_path("tests", "install", "consumer")

    def _nvcc_wrapper(self) -> str:
        """Kokkos' nvcc_wrapper (kokkos+cuda+wrapper)."""
        kokkos = self.spec["kokkos"]
        if kokkos.external:
            # An external spec has no kokkos-nvcc-wrapper node; Kokkos installs the wrapper in bin.
            return join_path(kokkos.prefix.bin, "nvcc_wrapper")
        return self["kokkos"].kokkos_cxx

    def _cxx_compiler(self) -> str:
        """The C++ compiler Kokkos code must be compiled with (the one Kokkos was built with)."""
        if self.spec.satisfies("+cuda"):
            return self._nvcc_wrapper()
        if self.spec.satisfies("+rocm"):
            return self.spec["hip"].hipcc
        # Host-only Kokkos: this package's own C++ compiler (through Spack's wrapper). Not
        # Kokkos.kokkos_cxx, which needs globals an external Kokkos does not get.
        return spack_cxx

    def cmake_args(self):
        spec = self.spec
        if spec.satisfies("+cuda"):
            backend = "CUDA"
        elif spec.satisfies("+rocm"):
            backend = "HIP"
        else:
            backend = "Serial"

        args = [
            self.define("KBUF_BACKEND", backend),
            self.define_from_variant("KBUF_ENABLE_KERNELS", "kernels"),
            self.define_from_variant("KBUF_ENABLE_BENCHMARKS", "benchmarks"),
            self.define_from_variant("KBUF_SHARED", "shared"),
            self.define_from_variant("KBUF_ENABLE_MPI", "mpi"),
            self.define_from_variant("KBUF_ENABLE_ADVISOR", "advisor"),
            # The examples are part of the project's own CI, not of an installation.
            self.define("KBUF_ENABLE_EXAMPLES", False),
            self.define("BUILD_TESTING", self.run_tests),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("CMAKE_CXX_COMPILER", self._cxx_compiler()),
        ]
        # kbuf's own code needs C++17; it is compiled in the standard Kokkos was built for
        # (C++20 for Kokkos 5), so that both agree on the View's layout. Asked with satisfies(),
        # not read from .variants[...].value: for an external Kokkos whose spec names cxxstd=17
        # that value is the tuple ('17',), not the string '17'.
        for cxxstd in ("23", "20", "17"):
            if spec["kokkos"].satisfies(f"cxxstd={cxxstd}"):
                args.append(self.define("CMAKE_CXX_STANDARD", cxxstd))
                break
        if spec.satisfies("+kernels"):
            args.append(self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix))
        return args

    @run_after("install")
    def copy_consumer_sources(self):
        """Keep the install-test consumer project for `spack test run`."""
        cache_extra_test_sources(self, [self.consumer_src])

    def _gpu_unavailable(self):
        """Why kbuf-consumer of a +cuda / +rocm build cannot run on this machine (None: it can).

        A GPU build is often installed, and its stand-alone test started, on a machine without
        the GPU (a login or build node): there the program is built, and its run is skipped."""
        if self.spec.satisfies("+cuda"):
            try:
                ctypes.CDLL("libcuda.so.1")
            except OSError:
                return "no CUDA driver (libcuda.so.1) on this machine"
            if not glob.glob("/dev/nvidia[0-9]*"):
                return "no NVIDIA GPU (/dev/nvidia*) on this machine"
        elif self.spec.satisfies("+rocm"):
            if not os.path.exists("/dev/kfd"):
                return "no AMD GPU (/dev/kfd) on this machine"
        return None

    def test_consumer(self):
        """build the install-test consumer against the installed kbuf and run it"""
        src = join_path(self.test_suite.current_test_cache_dir, self.consumer_src)
        if not os.path.isfile(join_path(src, "CMakeLists.txt")):
            raise SkipTest(f"{src}/CMakeLists.txt is missing")

        spec = self.spec
        env = {}
        if spec.satisfies("+cuda"):
            cxx = self._nvcc_wrapper()
            # nvcc_wrapper hands host code to this compiler, as in Kokkos' own build.
            env["NVCC_WRAPPER_DEFAULT_COMPILER"] = self["cxx"].cxx
        elif spec.satisfies("+rocm"):
            cxx = join_path(spec["hip"].prefix.bin, "hipcc")
        else:
            cxx = self["cxx"].cxx

        cmake = spec["cmake"].command
        build_dir = join_path(os.getcwd(), "consumer-build")
        with test_part(
            self, "test_consumer_build", purpose="configure and build the consumer project"
        ):
            cmake(
                "-S",
                src,
                "-B",
                build_dir,
                self.define("CMAKE_BUILD_TYPE", "Release"),
                self.define("CMAKE_CXX_COMPILER", cxx),
                self.define("CMAKE_PREFIX_PATH", ";".join(get_cmake_prefix_path(self))),
                self.define("kbuf_ROOT", self.prefix),
                self.define("Kokkos_ROOT", spec["kokkos"].prefix),
                extra_env=env,
            )
            cmake("--build", build_dir, extra_env=env)

        with test_part(self, "test_consumer_run", purpose="run kbuf-consumer"):
            found = find(build_dir, "kbuf-consumer", recursive=True)
            exes = [f for f in found if os.path.isfile(f) and os.access(f, os.X_OK)]
            if not exes:
                raise RuntimeError(f"kbuf-consumer was not built under {build_dir}")
            reason = self._gpu_unavailable()
            if reason:
                raise SkipTest(f"{reason}: kbuf-consumer was built, not run")
            Executable(exes[0])()
