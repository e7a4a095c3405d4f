// The profile's header: identity, the run's options, what it covers, and
// the summary.
#pragma once
#include "kg_profile_writer.h"

namespace kg {

struct ThreadProfile;

// The --mode value as the header and records name it.
const HChar* mode_name();
// A k value: "inf" or the number.
void write_k(FileWriter& out, UInt k);
// The output file until the profile replaces it at exit (create_output_file).
// callgrind_annotate prints its desc: line; kgrind_annotate recognizes the
// key "Incomplete profile".
void write_placeholder(FileWriter& out);
void write_all_event_counts(FileWriter& out, const Writer& w);
void write_header(Writer& w, ULong total, const ThreadProfile* threads, UInt n_threads);

} // namespace kg
