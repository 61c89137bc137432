/* kz model init | info | dump | fetch, kz eval: model files from the command
 * line (create, inspect, dump as JSON, download from a coordinator) and one
 * position's evaluation. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "games/game.h"
#include "tools/kz/kz.h"
#include "nn/model.h"
#include "nn/gbdt.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"

/* Loads a model file for the default game or prints why not (exit status 2). */
static int s_load(const char *path, const game_def *g, model **m)
{
    char err[512];
    if (modelfile_load(path, g, m, err, sizeof err) != 0)
        return kz_usage_error("%s", err);
    return 0;
}

static const char *s_opt_name(int kind)
{
    return kind == MODEL_OPT_ADAM ? "adam" : kind == MODEL_OPT_SGD ? "sgd" : "none";
}

/* --- kz model init ------------------------------------------------------------ */

static int s_model_init(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz model init [--game G] [--blocks N] [--filters F] [--value_hidden H]\n"
        "                     [--seed S] [--opp_policy_filters N] [--material_filters N]\n"
        "                     [--value_wdl] [--derived_planes | --derived_planes_if_any]\n"
        "                     [--version V]\n"
        "                     [--kind net|gbdt] [--force] OUT\n\n"
        "Writes a new model with random weights (He initialisation, reproducible from\n"
        "the seed) for the game's input and action shapes to OUT, atomically. Defaults\n"
        "are the specification's: 6 blocks of 64 filters, value head 64 wide, seed 1,\n"
        "version 0 (unversioned). An existing OUT is kept unless --force.\n"
        "--opp_policy_filters and --material_filters add the auxiliary heads that\n"
        "training uses (the opponent's next policy, the final material; 0 = none,\n"
        "the default; 2 and 1 are the usual widths): inference skips them, the\n"
        "trainer trains them (docs/trainer.md).\n"
        "--value_wdl ends the value head in win/draw/loss logits (a softmax, trained by\n"
        "cross-entropy; its value is P(win) - P(loss)) instead of one tanh output; the\n"
        "file is then model format version 2 (docs/learning.md).\n"
        "--derived_planes gives the network the game's derived input planes (for\n"
        "Khreibaga: the pieces each side's captures take, each side's longest capture;\n"
        "game_def.derive_planes), computed from the position at every evaluation; the\n"
        "file is then format version 2 (docs/learning.md, \"Input features\");\n"
        "--derived_planes_if_any does so for a game that has them, and nothing for\n"
        "another (make run's KZ_DERIVED_PLANES=auto).\n"
        "--kind gbdt writes gradient-boosted trees (nn/gbdt.h) without trees yet\n"
        "(values 0, uniform policy): the start of a cluster whose trainer trains\n"
        "trees (its initial_model, or the trainer's init_model).\n";
    /* The architecture's rows keep model_arch_default's values unless given. */
    typedef struct init_opts {
        long blocks, filters, value_hidden; /* the architecture's */
        long opp_policy_filters, material_filters; /* the auxiliary heads' (0: none) */
        bool value_wdl;                     /* a win/draw/loss value head */
        bool derived_planes;                /* the game's derived input planes */
        bool derived_if_any;                /* them when the game has any */
        long seed;                          /* of the weights */
        long version;                       /* written into the file */
        bool force;                         /* replace an existing OUT */
        char game[CONFIG_STR_MAX];          /* the game */
        char kind[CONFIG_STR_MAX];          /* "net" or "gbdt" */
    } init_opts;
#define CONFIG_STRUCT init_opts
    static const config_option rows[] = {
        KZ_GAME_OPTION(init_opts, game),
        CONFIG_ROW_INT(blocks, NULL, 0, 128, "residual blocks"),
        CONFIG_ROW_INT(filters, NULL, 1, 1024, "filters of the stem and the tower"),
        CONFIG_ROW_INT(value_hidden, NULL, 1, 4096, "width of the value head's hidden layer"),
        CONFIG_ROW_INT(opp_policy_filters, NULL, 0, 64,
                       "1x1 filters of the auxiliary opponent-policy head (0 = no such head)"),
        CONFIG_ROW_INT(material_filters, NULL, 0, 64,
                       "1x1 filters of the auxiliary material head (0 = no such head)"),
        CONFIG_ROW_BOOL(value_wdl, "false",
                        "a win/draw/loss value head (3 logits, softmax) instead of tanh"),
        CONFIG_ROW_BOOL(derived_planes, "false",
                        "the game's derived input planes (game_def.derive_planes) appended to its "
                        "planes"),
        {"derived_planes_if_any", CONFIG_BOOL, "false", 0, 0,
         offsetof(init_opts, derived_if_any),
         "the game's derived input planes when it has any (no error for a game without)"},
        CONFIG_ROW_INT(seed, "1", 0, 9007199254740991, "seed of the random weights"),
        CONFIG_ROW_INT(version, "0", 0, UINT32_MAX,
                       "model version written into the file (0 = unversioned)"),
        CONFIG_ROW_BOOL(force, "false", "replace an existing OUT"),
        CONFIG_ROW_STRING(kind, "net",
                          "net (a network) or gbdt (gradient-boosted trees, none yet)"),
    };
#undef CONFIG_STRUCT
    model_arch a;
    model_arch_default(&a, game_default());
    init_opts o = {.blocks = a.blocks,
                   .filters = a.filters,
                   .value_hidden = a.value_hidden,
                   .opp_policy_filters = a.opp_policy_filters,
                   .material_filters = a.material_filters};
    const char *words[argc];
    size_t nw;
    int prc = kz_parse_args("model init", usage, rows, sizeof rows / sizeof rows[0], &o, argc,
                            argv, words, (size_t)argc, &nw);
    if (prc >= 0)
        return prc;
    const game_def *g = kz_game("model init", o.game);
    if (!g)
        return 2;
    model_arch_default(&a, g); /* the game's shapes; the sizes are given below */
    a.blocks = (int)o.blocks;
    a.filters = (int)o.filters;
    a.value_hidden = (int)o.value_hidden;
    a.opp_policy_filters = (int)o.opp_policy_filters;
    a.material_filters = (int)o.material_filters;
    a.value_wdl = o.value_wdl ? 1 : 0;
    if (o.derived_planes || (o.derived_if_any && g->derived_planes)) {
        if (!g->derived_planes)
            return kz_usage_error("model init: game %s has no derived input planes", g->name);
        a.derived_planes = g->derived_planes;
        a.in_planes = g->planes + g->derived_planes;
    }
    long seed = o.seed, version = o.version;
    bool force = o.force;
    if (nw != 1)
        return kz_usage_error("model init: give exactly one OUT file (see kz model init --help)");
    const char *out = words[0];
    struct stat st;
    if (!force && stat(out, &st) == 0)
        return kz_usage_error("model init: '%s' exists; use --force to replace it", out);
    char err[200];
    model_kind kind;
    if (modelkind_parse(o.kind, &kind))
        return kz_usage_error("model init: --kind '%.40s' is not net or gbdt", o.kind);
    if (kind == MODEL_KIND_GBDT) {
        gbdt *t = gbdt_new(g);
        if (!t)
            return kz_usage_error("model init: out of memory");
        *gbdt_edit_meta(t) = (model_meta){.version = (uint32_t)version,
                                          .created_ms = time_wall_ms()};
        int rc = gbdt_save(t, out);
        char desc[200];
        gbdt_describe(t, desc, sizeof desc);
        uint64_t sum = gbdt_checksum(t);
        gbdt_destroy(&t);
        if (rc)
            return kz_write_error("model init", out, rc);
        printf("wrote %s: %s, checksum %016" PRIx64 "\n", out, desc, sum);
        return 0;
    }
    if (model_arch_check(&a, err, sizeof err))
        return kz_usage_error("model init: %s", err);
    model *m = model_new(&a, (uint64_t)seed);
    if (!m)
        return kz_usage_error("model init: cannot make the model (out of memory?)");
    model_edit_meta(m)->version = (uint32_t)version;
    int rc = modelfile_save(m, out, false);
    if (rc) {
        model_destroy(&m);
        return kz_write_error("model init", out, rc);
    }
    char desc[200];
    model_arch_describe(&a, desc, sizeof desc);
    printf("wrote %s: %s, %zu parameters, checksum %016" PRIx64 "\n", out, desc,
           model_arch_param_count(&a), model_checksum(m));
    model_destroy(&m);
    return 0;
}

/* --- kz model info ------------------------------------------------------------- */

static void s_iso_time(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000 + 1000) % 1000);
}

/* The metadata's lines, the last of info's common ones for either kind
 * (trees count the samples they were trained on as their step). */
static void s_info_meta(const model_meta *meta, bool trees, uint64_t checksum)
{
    char when[64];
    s_iso_time(meta->created_ms, when, sizeof when);
    printf("version:       %u (parent %u)\n", meta->version, meta->parent);
    if (trees)
        printf("samples:       %" PRIu64 " trained on\n", meta->step);
    else
        printf("train step:    %" PRIu64 "\n", meta->step);
    printf("created:       %s\n", when);
    printf("checksum:      %016" PRIx64 "\n", checksum);
}

static int s_model_info(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz model info FILE\n\n"
        "Checks a model file (any game) and prints its game, architecture, parameter\n"
        "count, forward FLOPs per position, version, parent, training step, creation\n"
        "time, weights checksum and optimizer state (checkpoints).\n";
    const char *words[argc];
    size_t nw;
    int prc = kz_parse_args("model info", usage, NULL, 0, NULL, argc, argv, words, (size_t)argc,
                            &nw);
    if (prc >= 0)
        return prc;
    if (nw != 1)
        return kz_usage_error("model info: give exactly one FILE (see kz model info --help)");
    const char *path = words[0];
    struct stat st;
    long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    uint8_t head[8];
    FILE *f = fopen(path, "rb");
    size_t hn = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (gbdt_is_file(head, hn)) {
        gbdt *t = NULL;
        char err[512];
        if (gbdt_load(path, NULL, &t, err, sizeof err))
            return kz_usage_error("%s", err);
        printf("file:          %s (published, %lld bytes)\n", path, bytes);
        printf("kind:          gbdt (gradient-boosted trees)\n");
        printf("game:          %s\n", gbdt_game(t));
        printf("value trees:   %d (%d nodes)\n", gbdt_tree_count(t, GBDT_VALUE),
               gbdt_node_count(t, GBDT_VALUE));
        printf("policy trees:  %d (%d nodes), pointwise: action id + features\n",
               gbdt_tree_count(t, GBDT_POLICY), gbdt_node_count(t, GBDT_POLICY));
        char desc[200];
        gbdt_describe(t, desc, sizeof desc);
        printf("describe:      %s\n", desc);
        s_info_meta(gbdt_get_meta(t), true, gbdt_checksum(t));
        gbdt_destroy(&t);
        return 0;
    }
    model *m = NULL;
    int rc = s_load(path, NULL, &m);
    if (rc)
        return rc;
    const model_arch *a = model_get_arch(m);
    size_t stats = 0;
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        stats += ti.kind == MODEL_TENSOR_STAT ? ti.size : 0;
    }
    printf("file:          %s (%s, %lld bytes)\n", path,
           model_optim_kind(m) ? "checkpoint" : "published", bytes);
    printf("kind:          net (residual network)\n");
    printf("game:          %s\n", a->game);
    printf("architecture:  %d blocks x %d filters, input %dx%dx%d, %d actions\n", a->blocks,
           a->filters, a->in_planes, a->height, a->width, a->actions);
    if (a->derived_planes)
        printf("input:         %d planes of the game, %d derived (docs/learning.md)\n",
               model_arch_game_planes(a), a->derived_planes);
    printf("heads:         policy %d filters, value %d filters, value hidden %d%s\n",
           a->policy_filters, a->value_filters, a->value_hidden,
           a->value_wdl ? ", value win/draw/loss" : "");
    if (a->opp_policy_filters || a->material_filters)
        printf("aux heads:     opponent policy %d filters, material %d filters (training "
               "only)\n",
               a->opp_policy_filters, a->material_filters);
    else
        printf("aux heads:     none\n");
    printf("parameters:    %zu trainable, %zu running statistics\n",
           model_arch_param_count(a), stats);
    printf("forward:       %.2f MFLOP per position\n", model_arch_forward_flops(a) / 1e6);
    s_info_meta(model_get_meta(m), false, model_checksum(m));
    if (model_optim_kind(m))
        printf("optimizer:     %s, %" PRIu64 " steps\n", s_opt_name(model_optim_kind(m)),
               model_optim_steps(m));
    else
        printf("optimizer:     none\n");
    model_destroy(&m);
    return 0;
}

/* --- kz model dump --------------------------------------------------------------- */

static void s_json_tensor(FILE *out, const char *name, const model_tensor_info *ti,
                          const float *data, bool with_data)
{
    fprintf(out, "    {\"name\": \"%s\", \"shape\": [", name);
    for (int k = 0; k < ti->ndim; k++)
        fprintf(out, k ? ", %d" : "%d", ti->shape[k]);
    fprintf(out, "]");
    if (with_data) {
        fprintf(out, ", \"data\": [");
        for (size_t i = 0; i < ti->size; i++)
            fprintf(out, i ? ",%.9g" : "%.9g", (double)data[i]);
        fprintf(out, "]");
    }
    fprintf(out, "}");
}

static int s_model_dump(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz model dump [--no-data] FILE\n\n"
        "Prints a model file (any game) as one JSON object: game, architecture,\n"
        "metadata, checksum and every tensor's name, canonical (PyTorch) shape and\n"
        "values (row-major, %.9g: exact floats), then, for checkpoints, the optimizer\n"
        "state the same way. --no-data leaves out the values.\n";
    typedef struct dump_opts {
        bool no_data; /* leave out the values */
    } dump_opts;
#define CONFIG_STRUCT dump_opts
    static const config_option rows[] = {
        CONFIG_ROW_BOOL(no_data, "false", "leave out the tensors' values"),
    };
#undef CONFIG_STRUCT
    dump_opts o;
    const char *words[argc];
    size_t nw;
    int prc = kz_parse_args("model dump", usage, rows, 1, &o, argc, argv, words, (size_t)argc,
                            &nw);
    if (prc >= 0)
        return prc;
    bool with_data = !o.no_data;
    if (nw != 1)
        return kz_usage_error("model dump: give exactly one FILE (see kz model dump --help)");
    model *m = NULL;
    int rc = s_load(words[0], NULL, &m);
    if (rc)
        return rc;
    const model_arch *a = model_get_arch(m);
    FILE *out = stdout;
    static char obuf[1 << 16];
    setvbuf(out, obuf, _IOFBF, sizeof obuf);
    fprintf(out, "{\n  \"format\": %d,\n  \"game\": \"%s\",\n", modelfile_format_of(a),
            a->game);
    fprintf(out,
            "  \"arch\": {\"in_planes\": %d, \"height\": %d, \"width\": %d, \"actions\": %d, "
            "\"blocks\": %d, \"filters\": %d, \"policy_filters\": %d, \"value_filters\": %d, "
            "\"value_hidden\": %d, \"opp_policy_filters\": %d, \"material_filters\": %d, "
            "\"value_wdl\": %d, \"derived_planes\": %d, \"bn_eps\": %.9g},\n",
            a->in_planes, a->height, a->width, a->actions, a->blocks, a->filters,
            a->policy_filters, a->value_filters, a->value_hidden, a->opp_policy_filters,
            a->material_filters, a->value_wdl, a->derived_planes,
            (double)model_bn_eps(m));
    const model_meta *meta = model_get_meta(m);
    fprintf(out,
            "  \"version\": %u,\n  \"parent_version\": %u,\n  \"train_step\": %" PRIu64
            ",\n  \"created_ms\": %" PRId64 ",\n  \"checksum\": \"%016" PRIx64 "\",\n",
            meta->version, meta->parent, meta->step, meta->created_ms, model_checksum(m));
    size_t biggest = 1;
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        biggest = ti.size > biggest ? ti.size : biggest;
    }
    float *buf = xmalloc(biggest * sizeof *buf);
    fprintf(out, "  \"tensors\": [\n");
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        model_tensor_read(m, i, buf);
        s_json_tensor(out, ti.name, &ti, buf, with_data);
        fprintf(out, i + 1 < model_tensor_count(m) ? ",\n" : "\n");
    }
    fprintf(out, "  ]");
    int kind = model_optim_kind(m);
    if (kind) {
        static const char *const names[2][2] = {{"sgd.momentum", ""}, {"adam.m", "adam.v"}};
        fprintf(out, ",\n  \"optimizer\": {\"kind\": \"%s\", \"steps\": %" PRIu64
                     ", \"slots\": [\n",
                s_opt_name(kind), model_optim_steps(m));
        bool first = true;
        for (int s = 0; s < model_optim_slots(m); s++)
            for (int i = 0; i < model_tensor_count(m); i++) {
                model_tensor_info ti;
                model_tensor_info_get(m, i, &ti);
                if (ti.kind == MODEL_TENSOR_STAT)
                    continue;
                char name[128];
                snprintf(name, sizeof name, "%s/%s", names[kind - 1][s], ti.name);
                model_optim_read(m, s, i, buf);
                fprintf(out, first ? "" : ",\n");
                s_json_tensor(out, name, &ti, buf, with_data);
                first = false;
            }
        fprintf(out, "\n  ]}");
    }
    fprintf(out, "\n}\n");
    free(buf);
    model_destroy(&m);
    if (fflush(out) != 0) {
        fprintf(stderr, "kz: model dump: write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* --- kz model fetch ------------------------------------------------------------ */

static int s_model_fetch(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz model fetch URL [--version V] [--game G] FILE\n\n"
        "Downloads a model file from a coordinator (URL: its HTTP address, e.g.\n"
        "http://127.0.0.1:8080) - the best model, or version V - checks it and writes\n"
        "it to FILE atomically (an existing FILE is replaced). A URL whose path ends in\n"
        ".kzm is taken as the file's own address. The file carries its registry\n"
        "version and parent (`kz model info FILE`). Then: kz play --model FILE.\n";
    typedef struct fetch_opts {
        long version;              /* 0: the best */
        char game[CONFIG_STR_MAX]; /* the game it must be for, "" = any */
    } fetch_opts;
#define CONFIG_STRUCT fetch_opts
    static const config_option rows[] = {
        CONFIG_ROW_INT(version, "0", 0, UINT32_MAX,
                       "model version to fetch (0 = the current best)"),
        CONFIG_ROW_STRING(game, "",
                          "the game the model must be for (\"\" = any: the coordinator's)"),
    };
#undef CONFIG_STRUCT
    fetch_opts o;
    const char *words[argc];
    size_t nw;
    int prc = kz_parse_args("model fetch", usage, rows, sizeof rows / sizeof rows[0], &o, argc,
                            argv, words, (size_t)argc, &nw);
    if (prc >= 0)
        return prc;
    if (nw != 2)
        return kz_usage_error("model fetch: give a URL and a FILE (see kz model fetch --help)");
    const game_def *want = o.game[0] ? kz_game("model fetch", o.game) : NULL;
    if (o.game[0] && !want)
        return 2;
    const char *base = words[0], *out = words[1];
    char url[1200], host[256], path[1024], err[512];
    int port;
    if (kz_url_split(base, host, sizeof host, &port, path, sizeof path, err, sizeof err))
        return kz_usage_error("model fetch: %s", err);
    size_t pl = strlen(path);
    if (pl > 4 && !strcmp(path + pl - 4, ".kzm")) {
        if (o.version)
            return kz_usage_error("model fetch: --version with a URL of a .kzm file: give the "
                                  "coordinator's address instead");
        snprintf(url, sizeof url, "%s", base);
    } else {
        /* The coordinator's address, perhaps with /status or a trailing '/'. */
        size_t bl = strlen(base);
        if (bl >= 7 && !strcmp(base + bl - 7, "/status"))
            bl -= 7;
        while (bl && base[bl - 1] == '/')
            bl--;
        if (o.version)
            snprintf(url, sizeof url, "%.*s/models/%ld.kzm", (int)bl, base, o.version);
        else
            snprintf(url, sizeof url, "%.*s/models/best.kzm", (int)bl, base);
    }
    uint8_t *body;
    size_t len;
    int code;
    int rc = kz_http_get(url, 256u << 20, &body, &len, &code, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kz: model fetch: %s\n", err);
        return rc == KZ_EINVAL ? 2 : 1;
    }
    if (code != 200) {
        /* The coordinator explains in one line; keep the first. */
        char line[200];
        text_printable(line, sizeof line, (const char *)body, strcspn((const char *)body, "\r\n"));
        free(body);
        fprintf(stderr, "kz: model fetch: %s answered %d%s%s\n", url, code, line[0] ? ": " : "",
                line);
        return code == 404 ? 2 : 1;
    }
    modelkind_info mi;
    rc = modelkind_check(body, len, want, &mi, err, sizeof err);
    if (rc) {
        free(body);
        fprintf(stderr, "kz: model fetch: %s: %s\n", url, err);
        return 1;
    }
    rc = file_write_atomic(out, body, len);
    free(body);
    if (rc)
        return kz_write_error("model fetch", out, rc);
    printf("wrote %s: model version %u (parent %u), %s, %zu bytes\n", out, mi.meta.version,
           mi.meta.parent, mi.describe, len);
    return 0;
}

int cmd_model(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz model init|info|dump|fetch ...\n\n"
        "Model files (nn/modelfile.h):\n"
        "  init [--blocks N --filters F --value_hidden H --seed S --version V\n"
        "        --opp_policy_filters N --material_filters N] OUT\n"
        "                 write a new randomly initialised model\n"
        "  info FILE      architecture, parameter count, version, checksum\n"
        "  dump FILE      every tensor's name, shape and values as JSON\n"
        "  fetch URL [--version V] FILE\n"
        "                 download the best model (or version V) from a coordinator\n"
        "`kz model SUBCOMMAND --help` describes each.\n";
    if (argc < 2)
        return kz_usage_error("model: give a subcommand: init, info, dump or fetch (see kz model "
                              "--help)");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "init"))
        return s_model_init(argc - 1, argv + 1);
    if (!strcmp(argv[1], "info"))
        return s_model_info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "dump"))
        return s_model_dump(argc - 1, argv + 1);
    if (!strcmp(argv[1], "fetch"))
        return s_model_fetch(argc - 1, argv + 1);
    return kz_usage_error("model: unknown subcommand '%s' (see kz model --help)", argv[1]);
}

/* --- kz eval ------------------------------------------------------------------------ */

/* One legal action's prior, for sorting. */
typedef struct s_prior {
    int action; /* real orientation */
    float p;    /* softmax over the legal actions */
    float logit;/* raw network output */
} s_prior;

static int s_cmp_prior(const void *x, const void *y)
{
    const s_prior *a = x, *b = y;
    if (a->p != b->p)
        return a->p < b->p ? 1 : -1;
    return a->action - b->action;
}

int cmd_eval(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz eval MODEL [--game G] [--position P] [--json] [--threads N]\n"
        "               [--precision P] [ACTION ...]\n\n"
        "Evaluates the position after the actions (from P, default the start) with the\n"
        "model: the value for the player to move (-1..1) and the policy over the legal\n"
        "actions (softmax of the logits over them), best first. --json prints one JSON\n"
        "object instead. --threads sets OpenBLAS's threads (default 1), --precision the\n"
        "network's arithmetic (fp32 or bf16, default fp32).\n";
    typedef struct eval_opts {
        char position[CONFIG_STR_MAX]; /* R20, "" = the start */
        bool json;                     /* one JSON object */
        long threads;                  /* OpenBLAS threads */
        char precision[CONFIG_STR_MAX]; /* fp32 | bf16 */
        char game[CONFIG_STR_MAX];      /* the game */
    } eval_opts;
#define CONFIG_STRUCT eval_opts
    static const config_option rows[] = {
        KZ_GAME_OPTION(eval_opts, game),
        CONFIG_ROW_STRING(position, "", "start from this position (R20), not the initial one"),
        CONFIG_ROW_BOOL(json, "false", "print one JSON object"),
        CONFIG_ROW_INT(threads, "1", 1, 64, "OpenBLAS threads"),
        CONFIG_ROW_STRING(precision, "fp32",
                          "the network's arithmetic: fp32, or bf16 (AVX512_BF16; fp32 where the "
                          "CPU lacks it)"),
    };
#undef CONFIG_STRUCT
    eval_opts o;
    const char *words[argc];
    size_t nw;
    int rc = kz_parse_args("eval", usage, rows, sizeof rows / sizeof rows[0], &o, argc, argv,
                           words, (size_t)argc, &nw);
    if (rc >= 0)
        return rc;
    int precision;
    if (model_precision_parse(o.precision, &precision))
        return kz_usage_error("eval: --precision must be fp32 or bf16, not '%s'", o.precision);
    bool json = o.json;
    long threads = o.threads;
    if (nw < 1)
        return kz_usage_error("eval: give a MODEL file (see kz eval --help)");
    const game_def *g = kz_game("eval", o.game);
    if (!g)
        return 2;
    game_state s;
    rc = kz_setup(g, "eval", o.position[0] ? o.position : NULL, (int)nw, (char **)words, 1, &s);
    if (rc)
        return rc;
    model *m = NULL;
    if ((rc = s_load(words[0], g, &m)) != 0)
        return rc;
    model_set_threads((int)threads);
    model_set_precision(precision);
    model_eval *e = model_eval_new(m, 1);
    int A = g->action_count;
    float *planes = xmalloc((size_t)g->planes * g->height * g->width * sizeof *planes);
    float *logits = xmalloc((size_t)A * sizeof *logits), value;
    g->encode_planes(&s, planes);
    model_eval_run(e, planes, 1, logits, &value);
    uint16_t legal[GAME_MAX_LEGAL], canon[GAME_MAX_LEGAL];
    float probs[GAME_MAX_LEGAL];
    s_prior pr[GAME_MAX_LEGAL];
    game_result res = g->result(&s);
    int n = res.over ? 0 : g->legal_actions(&s, legal);
    for (int i = 0; i < n; i++)
        canon[i] = (uint16_t)g->canonical_action(&s, legal[i]);
    model_softmax_masked(logits, canon, n, probs);
    for (int i = 0; i < n; i++)
        pr[i] = (s_prior){legal[i], probs[i], logits[canon[i]]};
    qsort(pr, (size_t)n, sizeof *pr, s_cmp_prior);
    char pos[256], act[32];
    g->format_position(&s, pos, sizeof pos);
    const char *mover = g->player_name(g->to_move(&s));
    if (json) {
        printf("{\"position\": \"%s\", \"to_move\": \"%s\", \"over\": %s, \"value\": %.6f, "
               "\"model_version\": %u, \"model_checksum\": \"%016" PRIx64 "\", \"policy\": [",
               pos, mover, res.over ? "true" : "false", (double)value, model_get_meta(m)->version,
               model_checksum(m));
        for (int i = 0; i < n; i++) {
            g->format_action(pr[i].action, act, sizeof act);
            printf("%s{\"action\": \"%s\", \"prior\": %.6f, \"logit\": %.6f}", i ? ", " : "",
                   act, (double)pr[i].p, (double)pr[i].logit);
        }
        printf("]}\n");
    } else {
        printf("position: %s (%s to move)\n", pos, mover);
        printf("value:    %+.4f for %s\n", (double)value, mover);
        if (res.over)
            printf("the game is over (%s)\n", game_reason_name(g, res.reason));
        else
            printf("policy over %d legal action%s:\n", n, n == 1 ? "" : "s");
        for (int i = 0; i < n; i++) {
            g->format_action(pr[i].action, act, sizeof act);
            printf("  %-8s %.4f  (logit %+.3f)\n", act, (double)pr[i].p, (double)pr[i].logit);
        }
    }
    free(planes);
    free(logits);
    model_eval_destroy(&e);
    model_destroy(&m);
    return 0;
}
