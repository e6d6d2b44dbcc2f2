#ifndef KBUF_TEBD_KBUF_TEBD_HPP
#define KBUF_TEBD_KBUF_TEBD_HPP

/// @file
/// Imaginary-time iTEBD for infinite spin chains with kbuf temporaries: everything.

#include <kbuf_tebd/ground_state.hpp>
#include <kbuf_tebd/itebd.hpp>
#include <kbuf_tebd/model.hpp>
#include <kbuf_tebd/svd.hpp>

#endif  // KBUF_TEBD_KBUF_TEBD_HPP
