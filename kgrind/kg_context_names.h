// The body's contexts: one name per k-context (a chain of function names),
// numbered by use for callgrind's name compression, and the canonical nodes
// each reports under.
#pragma once
#include "kg_profile_writer.h"

namespace kg {

struct ThreadProfile;

// A label's function name ("__root__" for the root).
const HChar* label_name(UInt label);
// The function of a label (none for the root).
FnInfo* label_function(UInt label);

// How often an id is used, to number the most used first (short numbers):
// uses of labels by nodes, of names by contexts and calls (fewer than 2^32).
struct IdUse {
   UInt uses;
   UInt id;
};
// use[0..n) sorted by use; *rank_of (new array) maps an id to its rank.
void rank_by_use(IdUse* use, UInt n, UInt** rank_of);

// One slot per canonical node of every thread (Writer::slots, ::reps).
void number_contexts(Writer& w, const ThreadProfile* threads, UInt n_threads);
// Costs, calls and jumps of every node go to its context's first node.
void fold_contexts(Writer& w);
// The callers' names in context names (Writer::caller_names): short
// (kg_short_names.h) where no other function of the body has the same short
// name. After number_contexts; release_caller_names frees them.
void name_callers(Writer& w);
void release_caller_names(Writer& w);
// fn= ids by use (Writer::name_rank). After fold_contexts.
void rank_names_by_use(Writer& w);

const ContextSlot* find_slot(const Writer& w, const ForestNode* n);
// The first node of a slot's context.
const ForestNode* rep_of(const Writer& w, const ContextSlot& s);
// The fn= id (0-based) written for a slot's context.
UInt written_name_id(const Writer& w, const ContextSlot& s);
// fn= / cfn= for a context, with compression.
void write_context_ref(Writer& w, const HChar* key, const ForestNode* n);

} // namespace kg
