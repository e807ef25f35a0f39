/* ckpt.c: open a checkpoint by its magic and check every tensor it must hold. */
#include "ckpt/ckpt.h"

#include <stdio.h>
#include <string.h>

const char *ckpt_kind_name(CkptKind k)
{
    return k == CKPT_GGUF ? "GGUF" : k == CKPT_LLAMA2C ? "llama2.c" : "?";
}

int ckpt_role_per_layer(CkptRole r)
{
    return r >= CK_ATTN_NORM && r <= CK_DOWN;
}

void ckpt_role_dims(const CkptShape *s, CkptRole r, size_t *rows, size_t *cols)
{
    size_t d = s->d_model, q = s->n_heads * s->head_dim, kv = s->n_kv_heads * s->head_dim, f = s->ffn_dim;
    size_t dims[CK_ROLE_COUNT][2] = {
        [CK_EMBED] = { s->vocab, d }, [CK_ATTN_NORM] = { 1, d }, [CK_WQ] = { q, d },       [CK_WK] = { kv, d },
        [CK_WV] = { kv, d },          [CK_WO] = { d, q },        [CK_FFN_NORM] = { 1, d }, [CK_GATE] = { f, d },
        [CK_UP] = { f, d },           [CK_DOWN] = { d, f },      [CK_FINAL_NORM] = { 1, d },
        [CK_OUTPUT] = { s->vocab, d },
    };
    *rows = dims[r][0];
    *cols = dims[r][1];
}

void ckpt_gguf_name(CkptRole r, size_t layer, char *buf, size_t cap)
{
    static const char *const names[CK_ROLE_COUNT] = {
        [CK_EMBED] = "token_embd",     [CK_ATTN_NORM] = "attn_norm", [CK_WQ] = "attn_q",
        [CK_WK] = "attn_k",            [CK_WV] = "attn_v",           [CK_WO] = "attn_output",
        [CK_FFN_NORM] = "ffn_norm",    [CK_GATE] = "ffn_gate",       [CK_UP] = "ffn_up",
        [CK_DOWN] = "ffn_down",        [CK_FINAL_NORM] = "output_norm", [CK_OUTPUT] = "output",
    };
    if (ckpt_role_per_layer(r))
        snprintf(buf, cap, "blk.%zu.%s.weight", layer, names[r]);
    else
        snprintf(buf, cap, "%s.weight", names[r]);
}

int ckpt_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e)
{
    if ((unsigned)r >= CK_ROLE_COUNT || (ckpt_role_per_layer(r) && layer >= ck->shape.n_layers))
        return err_set(e, ERR_USAGE, "no tensor of role %d in layer %zu (the model has %zu layers)", (int)r, layer,
                       ck->shape.n_layers);
    return ck->kind == CKPT_GGUF ? gguf_llama_tensor(ck, r, layer, t, e) : llama2c_tensor(ck, r, layer, t, e);
}

/* Every tensor the shape implies, once. */
static int check_all(const Checkpoint *ck, Err *e)
{
    for (int r = 0; r < CK_ROLE_COUNT; r++) {
        size_t n = ckpt_role_per_layer((CkptRole)r) ? ck->shape.n_layers : 1;
        for (size_t l = 0; l < n; l++) {
            CkptTensor t;
            if (ckpt_tensor(ck, (CkptRole)r, l, &t, e) < 0)
                return -1;
        }
    }
    return ck->kind == CKPT_GGUF ? gguf_llama_known_tensors(ck, e) : 0;
}

/* The base name of path, for a model without a name of its own. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int ckpt_open_gguf_memory(Checkpoint *ck, const void *data, size_t size, const char *name, Err *e)
{
    memset(ck, 0, sizeof *ck);
    ck->kind = CKPT_GGUF;
    if (gguf_parse(&ck->gguf, data, size, e) < 0)
        return -1;
    if (gguf_llama_shape(ck, name, e) < 0 || check_all(ck, e) < 0) {
        ckpt_close(ck);
        return -1;
    }
    return 0;
}

int ckpt_open(Checkpoint *ck, const char *path, Err *e)
{
    memset(ck, 0, sizeof *ck);
    MappedFile map;
    if (mapfile_open(&map, path, e) < 0)
        return -1;
    int rc;
    if (map.size >= 4 && memcmp(map.data, GGUF_MAGIC, 4) == 0) {
        rc = ckpt_open_gguf_memory(ck, map.data, map.size, base_name(path), e);
        if (rc == 0)
            ck->gguf.map = map; /* the GgufFile owns the mapping from now on */
    } else {
        ck->kind = CKPT_LLAMA2C;
        ck->map = map;
        rc = llama2c_parse(ck, base_name(path), e);
        if (rc == 0)
            rc = check_all(ck, e);
        if (rc < 0)
            ck->map = (MappedFile){ 0 };
    }
    if (rc < 0) {
        ckpt_close(ck);
        mapfile_close(&map);
        return err_wrap(e, "%s", path);
    }
    return 0;
}

int ckpt_open_vocab(Checkpoint *ck, const char *path, Err *e)
{
    memset(ck, 0, sizeof *ck);
    MappedFile map;
    if (mapfile_open(&map, path, e) < 0)
        return -1;
    GgufValueType elem;
    uint64_t n = 0;
    int rc = map.size >= 4 && memcmp(map.data, GGUF_MAGIC, 4) == 0
                 ? 0 : err_set(e, ERR_USAGE, "not a GGUF file (it does not start with 'GGUF')");
    ck->kind = CKPT_GGUF;
    if (rc == 0)
        rc = gguf_parse(&ck->gguf, map.data, map.size, e);
    if (rc == 0) {
        ck->gguf.map = map; /* the GgufFile owns the mapping from now on */
        map = (MappedFile){ 0 };
        int got = gguf_get_array(&ck->gguf, "tokenizer.ggml.tokens", &elem, &n, e);
        rc = got < 0 ? -1 : got == 0 ? err_set(e, ERR_USAGE, "metadata 'tokenizer.ggml.tokens' is missing") : 0;
    }
    if (rc < 0) {
        ckpt_close(ck);
        mapfile_close(&map);
        return err_wrap(e, "%s", path);
    }
    snprintf(ck->shape.name, sizeof ck->shape.name, "%s", base_name(path));
    ck->shape.vocab = (size_t)n;
    return 0;
}

void ckpt_close(Checkpoint *ck)
{
    if (ck->kind == CKPT_GGUF)
        gguf_close(&ck->gguf);
    mapfile_close(&ck->map);
    memset(ck, 0, sizeof *ck);
}
