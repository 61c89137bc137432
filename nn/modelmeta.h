/* modelmeta: what a model of either kind, the network (model.h) or
 * gradient-boosted trees (gbdt.h), says about itself beside its weights or
 * trees: the registry's version and the version it was trained from, how
 * much training it has had, when it was made. Both kinds embed one
 * model_meta and hand it out by pointer (model_get_meta and model_edit_meta,
 * gbdt_get_meta and gbdt_edit_meta); modelkind.h's info carries a copy.
 * model_meta_unversioned names the one change several callers make.
 *
 * Each file format keeps the fields its own way (modelfile.h: the protobuf
 * message's version, parent_version, train_step, created_ms; gbdt.h: u32,
 * u32, u64, u64 after the shapes); the game a model is for is not here but
 * with its shape (model_arch.game, gbdt_game), which the game is checked
 * against.
 *
 * A plain struct: its owner's thread rules apply. */
#ifndef KZ_NN_MODELMETA_H
#define KZ_NN_MODELMETA_H

#include <stdint.h>

typedef struct model_meta {
    uint32_t version;   /* the registry's version, 0 = unversioned */
    uint32_t parent;    /* the version it was trained from, 0 = none */
    uint64_t step;      /* training steps taken (network) or samples trained on (trees) */
    int64_t created_ms; /* creation time, ms since the epoch */
} model_meta;

/* Marks meta as a model trained from `parent` that the registry has not
 * numbered yet (version 0): how a trainer keeps its model between
 * candidates. */
static inline void model_meta_unversioned(model_meta *meta, uint32_t parent)
{
    meta->version = 0;
    meta->parent = parent;
}

#endif
