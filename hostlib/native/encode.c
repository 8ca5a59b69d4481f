/* Worker.push's encoder: a whole round's first copies in one pass (hostlib/native/worker.py's
 * encode_round calls it). */
#include "inahost.h"

/* one fragment's lanes, the common case: every value finite and inside int32 after rounding.
 * Returns 0 if some value is not, and the caller redoes the fragment exactly.
 *
 * float64: adding and subtracting 1.5 * 2^52 rounds half to even in the default rounding mode,
 * exactly for |x| < 2^51 (larger values fail the range test anyway); branch-free, so the
 * compiler vectorizes it.
 * float32: v * 2^scale is exact in float32 whenever it is a normal number (an overflow is inf
 * and fails the range test; an underflow rounds to 0 either way), and every float32 at or
 * above 2^23 is an integer, so SSE2's cvtps2dq (round half to even, the default mode) is
 * np.rint of it; four lanes at a time, byte-swapped by bswap32x4 (inahost.h). */
static int encode_fast64(const double *v, int64_t m, double scale, uint8_t *ln) {
    int32_t tmp[256];
    int ok = 1;
    for (int64_t i = 0; i < m; i++) {
        double x = v[i] * scale;
        x = (x + 6755399441055744.0) - 6755399441055744.0;
        ok &= (x >= -2147483648.0) & (x <= 2147483647.0);
        x = x < -2147483648.0 ? -2147483648.0 : (x > 2147483647.0 ? 2147483647.0 : x);
        tmp[i] = (int32_t)x;
    }
    for (int64_t i = 0; i < m; i++) {
        uint32_t y = __builtin_bswap32((uint32_t)tmp[i]);
        memcpy(ln + 4 * i, &y, 4);
    }
    return ok;
}

#ifdef __SSE2__
static int encode_fast32(const float *v, int64_t m, double scale, uint8_t *ln) {
    const __m128 s = _mm_set1_ps((float)scale), lo = _mm_set1_ps(-2147483648.0f), hi = _mm_set1_ps(2147483648.0f);
    __m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        __m128 x = _mm_mul_ps(_mm_loadu_ps(v + i), s);
        ok = _mm_and_ps(ok, _mm_and_ps(_mm_cmpge_ps(x, lo), _mm_cmplt_ps(x, hi)));   /* NaN: false */
        _mm_storeu_si128((__m128i *)(ln + 4 * i), bswap32x4(_mm_cvtps_epi32(x)));
    }
    int good = _mm_movemask_ps(ok) == 0xf;
    for (; i < m; i++) {
        float x = v[i] * (float)scale;
        good &= (x >= -2147483648.0f) & (x < 2147483648.0f);
        uint32_t y = __builtin_bswap32((uint32_t)_mm_cvtsi128_si32(_mm_cvtps_epi32(_mm_set_ss(x))));
        memcpy(ln + 4 * i, &y, 4);
    }
    return good;
}
#else
static int encode_fast32(const float *v, int64_t m, double scale, uint8_t *ln) {
    double tmp[256];
    for (int64_t i = 0; i < m; i++) tmp[i] = (double)v[i];
    return encode_fast64(tmp, m, scale, ln);
}
#endif

/* A whole round's first copies (ina_encode_frames): values (float32 or float64) ->
 * rint(v * 2^scale) -> int32 big-endian lanes behind a copy of ``prefix`` and of sub-model s's
 * header template (fragment id patched in). Returns 0, or 1 when a value is not finite or
 * overflows int32 (unless ``clip``): the caller then lets hostlib.protocol.encode_fragments
 * raise its exact error. */
int ina_encode_frames(const void *values, int64_t is_f32, const int64_t *sizes, int64_t nsubs, int64_t scale_bits,
                      int64_t lanes, int64_t clip, const uint8_t *prefix, const uint8_t *templates, uint8_t *out) {
    const double scale = ldexp(1.0, (int)scale_bits);
    const int64_t flen = PREFIX + HDR + 4 * lanes;
    const float *f32 = values;
    const double *f64 = values;
    int64_t pos = 0, row = 0;
    for (int64_t s = 0; s < nsubs; s++) {
        int64_t size = sizes[s];
        for (int64_t frag = 0; frag * lanes < size; frag++, row++) {
            uint8_t *fr = out + row * flen;
            memcpy(fr, prefix, PREFIX);
            memcpy(fr + PREFIX, templates + s * HDR, HDR);
            put32(fr + PREFIX + 8, (uint32_t)frag);
            uint8_t *ln = fr + PREFIX + HDR;
            int64_t m = size - frag * lanes < lanes ? size - frag * lanes : lanes;
            int fast = m <= 256 && (is_f32 ? encode_fast32(f32 + pos, m, scale, ln)
                                           : encode_fast64(f64 + pos, m, scale, ln));
            if (!fast) {
                for (int64_t i = 0; i < m; i++) {
                    double x = nearbyint((is_f32 ? (double)f32[pos + i] : f64[pos + i]) * scale);   /* np.rint */
                    if (!(x >= -2147483648.0 && x <= 2147483647.0)) {
                        if (!clip || isnan(x)) return 1;
                        x = x < 0 ? -2147483648.0 : 2147483647.0;
                    }
                    put32(ln + 4 * i, (uint32_t)(int32_t)x);
                }
            }
            memset(ln + 4 * m, 0, 4 * (lanes - m));
            pos += m;
        }
    }
    return 0;
}

/* Worker.result_into's decoder: a complete round's results (big-endian int32 rows of ``lanes``,
 * send order) into float32 values in gradient order, each ``(double)v * scale / divisor``
 * rounded once to float32 — what numpy's int64 -> float64, ldexp, divide and float32 cast give,
 * bit for bit (a product by a power of two is exact, and IEEE division and conversion round
 * the same in C). Fragment f (gradient order) is row ``rows[f]``, its ``widths[f]`` values go
 * to ``out + starts[f]``. */
void ina_decode_results(const uint8_t *results, int64_t lanes, const int64_t *rows, const int64_t *starts,
                        const int64_t *widths, int64_t nfrag, double scale, double divisor, float *out) {
    int e;
    if (frexp(divisor, &e) == 0.5) {      /* a power of two: dividing by it is exact in the scale */
        scale = ldexp(scale, 1 - e);
        divisor = 1.0;
    }
    for (int64_t f = 0; f < nfrag; f++) {
        const uint8_t *row = results + rows[f] * lanes * 4;
        float *dst = out + starts[f];
        if (divisor == 1.0) {
            for (int64_t i = 0; i < widths[f]; i++) dst[i] = (float)((double)(int32_t)be32(row + 4 * i) * scale);
        } else {
            for (int64_t i = 0; i < widths[f]; i++)
                dst[i] = (float)((double)(int32_t)be32(row + 4 * i) * scale / divisor);
        }
    }
}
