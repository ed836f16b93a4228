/* test_util_text.c: untrusted text at output (text.h: pdbx_utf8_next, pdbx_text_safe,
 * pdbx_text_width, pdbx_json_text_safe), the table printer that applies it (fmt.h), and the
 * time and duration formatting of fmt.h with values no real run has (1e300, NaN, INT64_MAX
 * seconds): the ASan+UBSan build runs these to prove the conversions are defined. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/fmt.h"
#include "store/util/text.h"

/* pdbx_text_safe of src into a roomy buffer, compared with want. */
static void expect_safe(const char *src, const char *want)
{
    char out[256];
    pdbx_text_safe(out, sizeof out, src);
    if (strcmp(out, want) != 0)
        fail_msg("pdbx_text_safe: got \"%s\", want \"%s\"", out, want);
}

/* No byte below 0x20, no DEL, no C1 control, and valid UTF-8. */
static void assert_terminal_safe(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = pdbx_utf8_next(s + i, n - i, &cp);
        assert_true(k > 0);
        assert_true(pdbx_text_cp_safe(cp));
        i += k;
    }
}

/* ---- decoding ------------------------------------------------------------------------------ */

static void test_utf8_next_accepts_well_formed(void **state)
{
    (void)state;
    uint32_t cp;
    assert_int_equal(pdbx_utf8_next("A", 1, &cp), 1);
    assert_int_equal(cp, 'A');
    assert_int_equal(pdbx_utf8_next("\xC3\xA9", 2, &cp), 2);             /* e acute */
    assert_int_equal(cp, 0xE9);
    assert_int_equal(pdbx_utf8_next("\xE2\x82\xAC", 3, &cp), 3);         /* euro sign */
    assert_int_equal(cp, 0x20AC);
    assert_int_equal(pdbx_utf8_next("\xF0\x9F\x98\x80", 4, &cp), 4);     /* U+1F600 */
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(pdbx_utf8_next("\xF4\x8F\xBF\xBF", 4, &cp), 4);     /* U+10FFFF */
    assert_int_equal(cp, 0x10FFFF);
    assert_int_equal(pdbx_utf8_next("\xED\x9F\xBF", 3, &cp), 3);         /* U+D7FF */
    assert_int_equal(pdbx_utf8_next("\xEE\x80\x80", 3, &cp), 3);         /* U+E000 */
}

static void test_utf8_next_rejects_ill_formed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xE0\x9F\xBF",     /* overlong '/' and more */
        "\xF0\x80\x80\xAF", "\xF0\x8F\xBF\xBF",                     /* overlong 4-byte */
        "\xED\xA0\x80", "\xED\xBF\xBF",                             /* surrogates D800, DFFF */
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xFE",     /* above U+10FFFF */
        "\x80", "\xBF",                                             /* stray continuation */
        "\xC3", "\xE2\x82", "\xF0\x9F\x98",                         /* truncated at the end */
        "\xE2\x82" "A", "\xC3" "\xC3\xA9",                          /* truncated mid-string */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (pdbx_utf8_next(bad[i], strlen(bad[i]), NULL) != 0)
            fail_msg("bad[%zu] decoded as well-formed", i);
    /* n bounds the read: a valid sequence longer than n is not taken. */
    assert_int_equal(pdbx_utf8_next("\xE2\x82\xAC", 2, NULL), 0);
    assert_int_equal(pdbx_utf8_next("A", 0, NULL), 0);
}

/* ---- terminal-safe text ------------------------------------------------------------------- */

static void test_safe_replaces_controls_and_escapes(void **state)
{
    (void)state;
    expect_safe("plain Llama-3.2-1B", "plain Llama-3.2-1B");
    expect_safe("\x1b[2J\x1b[31mred", "?[2J?[31mred");               /* CSI: clear, colour */
    expect_safe("\x1b]0;pwned\x07title", "?]0;pwned?title");           /* OSC window title */
    expect_safe("a\x1bPq#0\x1b\\b", "a?Pq#0?\\b");                     /* DCS ... ST */
    expect_safe("tab\tnl\ncr\rbs\bnul", "tab?nl?cr?bs?nul");
    expect_safe("del\x7f", "del?");
    expect_safe("c1 csi \xC2\x9B" "31m", "c1 csi ?31m");              /* U+009B is one '?' */
    expect_safe("c1 \xC2\x80 \xC2\x9F \xC2\xA0", "c1 ? ? \xC2\xA0");   /* U+00A0 is printable */
    expect_safe(NULL, "");
}

static void test_safe_replaces_ill_formed_utf8(void **state)
{
    (void)state;
    expect_safe("over\xC0\xAFlong", "over??long");                    /* one '?' per bad byte */
    expect_safe("\xE0\x80\xAF", "???");
    expect_safe("sur\xED\xA0\x80rogate", "sur???rogate");
    expect_safe("big\xF4\x90\x80\x80", "big????");
    expect_safe("stray\x80\xBF", "stray??");
    expect_safe("cut\xE2\x82", "cut??");
    /* A truncated sequence never swallows the character after it. */
    expect_safe("\xE2\x82" "A\xC3\xA9", "??A\xC3\xA9");
    expect_safe("\xFF\xFE", "??");
}

static void test_safe_keeps_valid_multibyte(void **state)
{
    (void)state;
    const char *ok = "caf\xC3\xA9 \xE2\x82\xAC \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xCE\xBB";
    expect_safe(ok, ok);
    assert_int_equal(pdbx_text_width(ok), 13);
    assert_int_equal(pdbx_text_width("abc"), 3);
    assert_int_equal(pdbx_text_width(NULL), 0);
}

static void test_safe_bounds_and_in_place(void **state)
{
    (void)state;
    char small[5];
    pdbx_text_safe(small, sizeof small, "ab\xE2\x82\xAC");         /* room for 4 bytes: "ab" */
    assert_string_equal(small, "ab");                             /* the euro is never cut */
    pdbx_text_safe(small, sizeof small, "abcdefgh");
    assert_string_equal(small, "abcd");
    pdbx_text_safe(small, 1, "abc");
    assert_string_equal(small, "");
    assert_null(pdbx_text_safe(NULL, 4, "x"));
    char buf[] = "m\x1b[1m\xC2\x9B\xE2\x82\xAC\xC0!";
    pdbx_text_safe(buf, sizeof buf, buf);
    assert_string_equal(buf, "m?[1m?\xE2\x82\xAC?!");
    assert_terminal_safe(buf);
    /* Every byte value, alone and before a valid character, comes out safe. */
    for (int b = 1; b < 256; b++) {
        char in[8] = { (char)b, '\xC3', '\xA9', 0 }, out[16];
        pdbx_text_safe(out, sizeof out, in);
        assert_terminal_safe(out);
        assert_non_null(strstr(out, "\xC3\xA9"));
    }
}

/* ---- JSON text ------------------------------------------------------------------------------ */

static void test_json_text_safe(void **state)
{
    (void)state;
    char *s = pdbx_json_text_safe("{\"model\":\"a\xC0\xAF" "b\",\"n\":1}");
    assert_string_equal(s, "{\"model\":\"a\xEF\xBF\xBD\xEF\xBF\xBD" "b\",\"n\":1}");
    free(s);
    s = pdbx_json_text_safe("[\"\xED\xA0\x80\",\"\xE2\x82\"]");     /* surrogate, truncated */
    assert_string_equal(s, "[\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\",\"\xEF\xBF\xBD\xEF\xBF\xBD\"]");
    free(s);
    s = pdbx_json_text_safe("[\"del\x7f c1\xC2\x9B\"]");          /* escaped, not lost */
    assert_string_equal(s, "[\"del\\u007f c1\\u009b\"]");
    free(s);
    const char *ok = "{\n\t\"m\": \"caf\xC3\xA9 \\u001b \xF0\x9F\x98\x80\"\n}";
    s = pdbx_json_text_safe(ok);
    assert_string_equal(s, ok);                                   /* valid text unchanged */
    free(s);
    assert_null(pdbx_json_text_safe(NULL));
}

/* ---- the table printer ------------------------------------------------------------------------ */

static char *print_table(const pdbx_table *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    pdbx_table_print(t, f, NULL);
    fclose(f);
    return text;
}

static void test_table_cells_are_safe_and_aligned(void **state)
{
    (void)state;
    pdbx_table *t = pdbx_table_new(2);
    assert_int_equal(pdbx_table_header(t, 0, "model\x1b[1m", PDBX_ALIGN_LEFT), 0);
    assert_int_equal(pdbx_table_header(t, 1, "n", PDBX_ALIGN_RIGHT), 0);
    assert_int_equal(pdbx_table_add_row(t), 0);
    assert_int_equal(pdbx_table_set(t, 0, "%s", "\x1b[2J\x1b]0;x\x07\xC0"), 0);
    assert_int_equal(pdbx_table_set(t, 1, "%d", 1), 0);
    assert_int_equal(pdbx_table_add_row(t), 0);
    assert_int_equal(pdbx_table_set(t, 0, "%s", "caf\xC3\xA9"), 0);
    assert_int_equal(pdbx_table_set(t, 1, "%d", 22), 0);
    assert_int_equal(pdbx_table_col_width(t, 0), 11);               /* characters, not bytes */
    char *text = print_table(t);
    assert_string_equal(text, "model?[1m     n\n"
                              "?[2J?]0;x??   1\n"
                              "caf\xC3\xA9         22\n");
    free(text);
    pdbx_table_free(t);
}

/* ---- time and duration at the edges ------------------------------------------------------------ */

static void test_fmt_time_extremes(void **state)
{
    (void)state;
    static const double na[] = { 1e300, -1e300, INFINITY, -INFINITY, 0.0, -1.0,
                                 9223372036854775807.0, 9.3e18, 1.8446744073709552e19,
                                 PDBX_FMT_TIME_MAX, 1e15 };
    char buf[64];
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++) {
        pdbx_fmt_time(na[i], buf, sizeof buf);
        if (strcmp(buf, PDBX_NA) != 0)
            fail_msg("pdbx_fmt_time(%g) = \"%s\", want N/A", na[i], buf);
    }
    assert_string_equal(pdbx_fmt_time(NAN, buf, sizeof buf), PDBX_NA);
    /* The last representable moment still prints (a 4- or 5-digit year, by the local zone). */
    pdbx_fmt_time(PDBX_FMT_TIME_MAX - 1.0, buf, sizeof buf);
    assert_string_not_equal(buf, PDBX_NA);
    assert_true(strncmp(buf, "9999-12-3", 9) == 0 || strncmp(buf, "10000-01-01", 11) == 0);
}

static void test_fmt_duration_extremes(void **state)
{
    (void)state;
    static const double na[] = { 1e300, -1e300, INFINITY, -INFINITY, -1.0,
                                 9223372036854775807.0, 9.3e18, PDBX_FMT_DURATION_MAX };
    char buf[64];
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++) {
        pdbx_fmt_duration(na[i], buf, sizeof buf);
        if (strcmp(buf, PDBX_NA) != 0)
            fail_msg("pdbx_fmt_duration(%g) = \"%s\", want N/A", na[i], buf);
    }
    assert_string_equal(pdbx_fmt_duration(NAN, buf, sizeof buf), PDBX_NA);
    assert_string_equal(pdbx_fmt_duration(0.0, buf, sizeof buf), "0s");
    assert_string_equal(pdbx_fmt_duration(3725.0, buf, sizeof buf), "1h02m");
    /* Just below the cap: hours, exactly (277777777 h 46 min 39 s). */
    assert_string_equal(pdbx_fmt_duration(999999999999.0, buf, sizeof buf), "277777777h46m");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_next_accepts_well_formed),
        cmocka_unit_test(test_utf8_next_rejects_ill_formed),
        cmocka_unit_test(test_safe_replaces_controls_and_escapes),
        cmocka_unit_test(test_safe_replaces_ill_formed_utf8),
        cmocka_unit_test(test_safe_keeps_valid_multibyte),
        cmocka_unit_test(test_safe_bounds_and_in_place),
        cmocka_unit_test(test_json_text_safe),
        cmocka_unit_test(test_table_cells_are_safe_and_aligned),
        cmocka_unit_test(test_fmt_time_extremes),
        cmocka_unit_test(test_fmt_duration_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
