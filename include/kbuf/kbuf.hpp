#ifndef KBUF_KBUF_HPP
#define KBUF_KBUF_HPP

/// @file
/// kbuf: a buffer allocator that serves short-lived temporaries of Kokkos applications as
/// unmanaged Views carved out of one preallocated, growable buffer, between kernels and inside
/// them (`kbuf::Workspace`), and in libraries that allocate inside calls their caller never sees
/// (`kbuf::use`, `kbuf::temporary`).

#include <kbuf/allocator_pool.hpp>
#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/current.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/sizes.hpp>
#include <kbuf/sizes_file.hpp>
#include <kbuf/statistics.hpp>
#include <kbuf/workspace.hpp>

#endif  // KBUF_KBUF_HPP
