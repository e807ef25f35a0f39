/* layouts.h: the constructors kv_open chooses between (private to kv/). */
#ifndef KVSCOPE_KV_LAYOUTS_H
#define KVSCOPE_KV_LAYOUTS_H

#include "kv/cache.h"
#include "kv/spec.h"

KvCache *contiguous_open(KvSpec *spec, const KvGeometry *geo, Err *e);
KvCache *dynamic_open(KvSpec *spec, const KvGeometry *geo, Err *e);

#endif
