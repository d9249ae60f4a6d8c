// Draft trees (tree speculation, G12): drafts given as a tree by parent indices (Drafts::parents,
// ScheduledRequest::draft_parents: -1 for a child of the request's last token, else an earlier
// draft). The walk the verifier makes down such a tree, shared by the runner (which samples) and the
// scheduler (which checks the samples): at each node the target's sample picks the child drafting
// that token. Empty parents mean a chain (draft i's parent is i - 1). Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lemma {

// The draft under `parent` (-1: under the last token) whose token is `token`: the lowest such index,
// or -1 when no child drafts it. `parents` empty: the chain, whose only child of `parent` is parent + 1.
int32_t find_draft_child(std::span<const int32_t> parents, std::span<const int32_t> drafts, int32_t parent,
                         int32_t token);

// The drafts under `parent` (-1: under the last token), in index order, into `out` (cleared first):
// for a stochastic tree, the order the draft drew them in. `parents` empty: the chain's parent + 1.
void draft_children(std::span<const int32_t> parents, int64_t num_drafts, int32_t parent, std::vector<int32_t>& out);

// Levels of the tree (the deepest path's drafts): drafts.size() for a chain. Parents valid.
int64_t draft_tree_levels(std::span<const int32_t> parents, int64_t num_drafts);

// Parents valid: every parents[i] is -1 or lies in [0, i).
bool is_valid_draft_tree(std::span<const int32_t> parents);

}  // namespace lemma
