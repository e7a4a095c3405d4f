// The k-SF records (comment lines after the body): the function table,
// each thread's forest (function mode) or the block forests (block modes),
// and the contexts KGRIND_CURRENT_CONTEXT() handed out
// (docs/output-format.md).
#pragma once
#include "kg_profile_writer.h"

namespace kg {

struct ThreadProfile;

// The header's node counts. Function mode: the labels' order and the
// nodes each thread's records hold. Block modes write block forests: the
// header counts the function forests' nodes, none left out.
void select_thread_nodes(Writer& w, const ThreadProfile* threads, UInt n_threads);
void release_thread_nodes(Writer& w, UInt n_threads);
void write_ksf_records(Writer& w, const ThreadProfile* threads, UInt n_threads);
// Block modes: the block k-SFs (docs/output-format.md, section 5).
void write_block_records(Writer& w);
// "# kgrind-context" records (write_context_id).
void write_context_ids(Writer& w);

} // namespace kg
