// The Valgrind tool API, included once for the whole tool.
// Valgrind's headers are C; they also define NULL as ((void*)0), which C++
// does not convert to other pointer types, so tool code uses nullptr.
#pragma once

extern "C" {
#include "pub_tool_basics.h"
}
// vki-linux.h declares a C++ template when compiled as C++.
#include "pub_tool_vki.h"
extern "C" {
#include "pub_tool_tooliface.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_machine.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
#include "pub_tool_wordfm.h"
#include "pub_tool_oset.h"
#include "pub_tool_seqmatch.h"
#include "libvex_ir.h"
#if defined(VGA_amd64)
#include "libvex_guest_amd64.h"
#elif defined(VGA_arm64)
#include "libvex_guest_arm64.h"
#endif
}

// Valgrind's demangler (the core's pub_core_demangle.h, not in the tool
// headers; this form since Valgrind 3.11): what symbols' names go through,
// for names the tool reads itself (kg_inline_names.h). *result is the core's
// buffer until the next call; with --demangle=no, orig.
extern "C" void VG_(demangle)(Bool do_cxx_demangling, Bool do_z_demangling, const HChar* orig,
                              const HChar** result);

// The core's --read-inline-info (pub_core_options.h, not in the tool
// headers): whether the debug info's inline records are read.
extern "C" Bool VG_(clo_read_inline_info);
