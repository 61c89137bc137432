/* gbdt_train: XGBoost training of the two forests. See gbdt_train.h. */
#include "nn/gbdt_train.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#include "common/util.h"

#define O(f) offsetof(gbdt_train_config, f)
const config_option gbdt_train_options[] = {
    {"gbdt_rounds", CONFIG_INT32, "40", 1, 100000, O(rounds),
     "trees: boosting rounds (trees) per forest"},
    {"gbdt_depth", CONFIG_INT32, "6", 1, 32, O(max_depth), "trees: deepest tree"},
    {"gbdt_eta", CONFIG_DOUBLE, "0.3", 0.001, 1, O(eta), "trees: learning rate"},
};
#undef O
const size_t gbdt_train_options_n = sizeof gbdt_train_options / sizeof gbdt_train_options[0];

void gbdt_train_config_default(gbdt_train_config *tc)
{
    /* The fields without a row. */
    *tc = (gbdt_train_config){.min_child_weight = 1.0,
                              .subsample = 1.0,
                              .colsample = 1.0,
                              .visited = 4,
                              .unvisited = 4,
                              .threads = 1,
                              .seed = 1};
    config_defaults(gbdt_train_options, gbdt_train_options_n, tc);
}

const char *gbdt_train_library(void)
{
    static char buf[32];
    int a, b, c;
    XGBoostVersion(&a, &b, &c);
    snprintf(buf, sizeof buf, "%d.%d.%d", a, b, c);
    return buf;
}

/* XGBoost's last error as our one-line message. */
static int s_xgb_err(char *err, size_t errlen, const char *what)
{
    const char *e = XGBGetLastError();
    const char *nl = e ? strchr(e, '\n') : NULL;
    int n = nl ? (int)(nl - e) : 200;
    return err_set(err, errlen, KZ_EINVAL, "XGBoost: %s: %.*s", what, n, e ? e : "?");
}

/* Trains one forest on rows x (n, nf) with labels y and copies it into m's
 * forest head. 0 or an error with err. loss: the mean loss on the rows. */
static int s_forest(gbdt *m, int head, const float *x, const float *y, int n, int nf,
                    const gbdt_train_config *tc, double *loss, void **keep, char *err,
                    size_t errlen)
{
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    const char **dump = NULL;
    bst_ulong ntrees = 0;
    int rc = 0;
    char v[64];
    if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)nf, NAN, &dm) ||
        XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n) || XGBoosterCreate(&dm, 1, &b)) {
        rc = s_xgb_err(err, errlen, "the training matrix");
        goto out;
    }
    const char *params[][2] = {
        {"verbosity", "0"},
        {"tree_method", "hist"},
        {"objective", head == GBDT_VALUE ? "reg:squarederror" : "binary:logistic"},
        {"base_score", head == GBDT_VALUE ? "0" : "0.5"},
    };
    for (size_t k = 0; k < sizeof params / sizeof params[0]; k++)
        if (XGBoosterSetParam(b, params[k][0], params[k][1])) {
            rc = s_xgb_err(err, errlen, params[k][0]);
            goto out;
        }
    struct {
        const char *name;
        double value;
    } nums[] = {{"max_depth", tc->max_depth}, {"eta", tc->eta},
                {"min_child_weight", tc->min_child_weight}, {"subsample", tc->subsample},
                {"colsample_bytree", tc->colsample}, {"nthread", tc->threads},
                {"seed", (double)(tc->seed % 1000000007u)}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        snprintf(v, sizeof v, "%.17g", nums[k].value);
        if (XGBoosterSetParam(b, nums[k].name, v)) {
            rc = s_xgb_err(err, errlen, nums[k].name);
            goto out;
        }
    }
    for (int it = 0; it < tc->rounds; it++)
        if (XGBoosterUpdateOneIter(b, it, dm)) {
            rc = s_xgb_err(err, errlen, "a boosting round");
            goto out;
        }
    if (XGBoosterDumpModelEx(b, "", 0, "text", &ntrees, &dump)) {
        rc = s_xgb_err(err, errlen, "the dump");
        goto out;
    }
    /* The forest into m, then the check against XGBoost's own margins. */
    rc = gbdt_set_forest_from_dump(m, head, dump, (int)ntrees, 0.0f, err, errlen);
    if (rc)
        goto out;
    bst_ulong len;
    const float *margin;
    if (XGBoosterPredict(b, dm, 1, 0, 0, &len, &margin) || len != (bst_ulong)n) {
        rc = s_xgb_err(err, errlen, "the check's prediction");
        goto out;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        float mine = gbdt_predict_row(m, head, x + (size_t)i * nf);
        if (i < 64 && fabsf(mine - margin[i]) > 1e-3f * (1.0f + fabsf(margin[i]))) {
            rc = err_set(err, errlen, KZ_EINVAL, "the %s trees read back predict %g for row %d, "
                         "XGBoost %g", head == GBDT_VALUE ? "value" : "policy", (double)mine, i,
                         (double)margin[i]);
            goto out;
        }
        if (head == GBDT_VALUE) {
            double d = margin[i] - y[i];
            sum += d * d;
        } else {
            double p = 1.0 / (1.0 + exp(-(double)margin[i]));
            p = fmin(fmax(p, 1e-7), 1 - 1e-7);
            sum -= y[i] * log(p) + (1 - y[i]) * log(1 - p);
        }
    }
    *loss = n ? sum / n : 0;
out:
    if (rc == 0 && keep) {
        *keep = b;
        b = NULL;
    }
    if (b)
        XGBoosterFree(b);
    if (dm)
        XGDMatrixFree(dm);
    return rc;
}

/* Draws up to k of the n entries of w (weights >= 0, changed) without
 * replacement in proportion to w; their indices into out. The count. */
static int s_draw(float *w, int n, int k, rng_t *r, int *out)
{
    int got = 0;
    double total = 0;
    for (int i = 0; i < n; i++)
        total += w[i];
    while (got < k && total > 1e-12) {
        double u = rng_uniform(r) * total, acc = 0;
        int pick = -1;
        for (int i = 0; i < n; i++) {
            if (w[i] <= 0)
                continue;
            acc += w[i];
            pick = i;
            if (u < acc)
                break;
        }
        if (pick < 0)
            break;
        out[got++] = pick;
        total -= w[pick];
        w[pick] = 0;
    }
    return got;
}

int gbdt_train(gbdt *m, const game_def *g, const float *planes, const float *pi, const float *z,
               int N, const gbdt_train_config *tc, gbdt_train_stats *st, char *err,
               size_t errlen)
{
    return gbdt_train_boosters(m, g, planes, pi, z, N, tc, st, NULL, err, errlen);
}

int gbdt_booster_predict(void *booster, const float *x, int rows, int cols, float *out)
{
    char arr[200];
    snprintf(arr, sizeof arr,
             "{\"data\": [%llu, true], \"shape\": [%d, %d], \"typestr\": \"<f4\", "
             "\"version\": 3}",
             (unsigned long long)(uintptr_t)x, rows, cols);
    const bst_ulong *shape;
    bst_ulong dim;
    const float *r;
    if (XGBoosterPredictFromDense(booster, arr,
                                  "{\"type\": 1, \"training\": false, \"iteration_begin\": 0, "
                                  "\"iteration_end\": 0, \"strict_shape\": false, "
                                  "\"missing\": NaN, \"cache_id\": 0}",
                                  NULL, &shape, &dim, &r))
        return KZ_EINVAL;
    memcpy(out, r, sizeof(float) * (size_t)rows);
    return 0;
}

void gbdt_booster_free(void **booster)
{
    if (booster && *booster) {
        XGBoosterFree(*booster);
        *booster = NULL;
    }
}

int gbdt_train_boosters(gbdt *m, const game_def *g, const float *planes, const float *pi,
                        const float *z, int N, const gbdt_train_config *tc,
                        gbdt_train_stats *st, void *boosters[2], char *err, size_t errlen)
{
    if (boosters)
        boosters[0] = boosters[1] = NULL;
    double t0 = time_now();
    if (N < 1 || tc->rounds < 0 || tc->rounds > 100000 || tc->max_depth < 1 ||
        tc->max_depth > GBDT_MAX_DEPTH - 2 || !(tc->eta > 0) || !(tc->subsample > 0) ||
        tc->subsample > 1 || !(tc->colsample > 0) || tc->colsample > 1 || tc->visited < 1 ||
        tc->unvisited < 0 || tc->threads < 1)
        return err_set(err, errlen, KZ_EINVAL, "gbdt training: bad settings or no samples");
    int F = gbdt_feature_count(g), A = g->action_count;
    size_t P = (size_t)g->planes * g->height * g->width;
    int per = tc->visited + tc->unvisited;
    float *xv = malloc(sizeof(float) * (size_t)N * F);
    float *xp = malloc(sizeof(float) * (size_t)N * per * (F + 1));
    float *yp = malloc(sizeof(float) * (size_t)N * per);
    float *w = malloc(sizeof(float) * (size_t)A);
    int *pick = malloc(sizeof(int) * (size_t)(per + 1));
    int rc = 0;
    gbdt *nm = gbdt_new(g);
    if (!xv || !xp || !yp || !w || !pick || !nm) {
        rc = err_set(err, errlen, KZ_ENOMEM, "out of memory for %d training samples", N);
        goto out;
    }
    /* Step 1. The rows. */
    rng_t r;
    rng_seed(&r, tc->seed);
    int np = 0;
    for (int i = 0; i < N; i++) {
        float *fx = xv + (size_t)i * F;
        gbdt_features(g, planes + (size_t)i * P, fx);
        const float *row = pi + (size_t)i * A;
        int visited = 0;
        for (int a = 0; a < A; a++) {
            w[a] = row[a] > 0 ? row[a] : 0;
            visited += row[a] > 0;
        }
        if (!visited)
            continue; /* no policy target */
        int k = s_draw(w, A, tc->visited, &r, pick);
        /* Unvisited actions uniformly: weight 1 on every action not visited. */
        for (int a = 0; a < A; a++)
            w[a] = row[a] > 0 ? 0.0f : 1.0f;
        k += s_draw(w, A, tc->unvisited, &r, pick + k);
        for (int j = 0; j < k; j++) {
            float *px = xp + (size_t)np * (F + 1);
            px[0] = (float)pick[j];
            memcpy(px + 1, fx, sizeof(float) * (size_t)F);
            yp[np++] = row[pick[j]];
        }
    }
    /* Step 2. The forests. */
    gbdt_train_stats s = {.value_rows = N, .policy_rows = np};
    if ((rc = s_forest(nm, GBDT_VALUE, xv, z, N, F, tc, &s.value_mse,
                       boosters ? &boosters[0] : NULL, err, errlen)))
        goto out;
    if (np > 0 && (rc = s_forest(nm, GBDT_POLICY, xp, yp, np, F + 1, tc, &s.policy_xent,
                                 boosters ? &boosters[1] : NULL, err, errlen))) {
        if (boosters)
            gbdt_booster_free(&boosters[0]);
        goto out;
    }
    /* Step 3. Into m (metadata kept). */
    gbdt_adopt_forests(m, nm);
    gbdt_edit_meta(m)->step += (uint64_t)N;
    s.seconds = time_now() - t0;
    if (st)
        *st = s;
out:
    gbdt_destroy(&nm);
    free_all(xv, xp, yp, w, pick);
    return rc;
}
