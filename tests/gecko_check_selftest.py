#!/usr/bin/env python3
"""gecko_check_selftest.py - unit tests for tests/gecko_check.py (stdlib unittest only).

    python3 tests/gecko_check_selftest.py [-v]

1. The two known-good profiles in /work/shared/data/gecko-examples/ (minimal.json, full.json;
   both are format version 36, so the default --strict-version applies) give zero errors.
2. For every rule of gecko_check.RULES (source: /work/shared/docs/gecko-format.md), a deep copy
   of one example is broken in exactly that way and the checker must report that rule id, at
   the expected level, at the expected path. Each test is named after its rule.
   test_every_rule_is_exercised makes sure no rule id is left without a test.
3. The command line: exit codes 0 / 1 / 2, gzip sniffed by magic bytes, the output line
   format, --quiet, --werror, --any-version, --expect-threads, --require-samples.

Exits non-zero on failure; prints unittest's usual "Ran N tests ... OK" summary.
"""

import contextlib
import copy
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gecko_check  # noqa: E402

CHECKER = os.path.join(HERE, "gecko_check.py")
EXAMPLES = os.environ.get("GECKO_EXAMPLES", "/work/shared/data/gecko-examples")
with open(os.path.join(EXAMPLES, "minimal.json"), encoding="utf-8") as _f:
    MINIMAL = json.load(_f)
with open(os.path.join(EXAMPLES, "full.json"), encoding="utf-8") as _f:
    FULL = json.load(_f)


def minimal():
    return copy.deepcopy(MINIMAL)


def full():
    return copy.deepcopy(FULL)


def t0(p):
    """First top-level thread."""
    return p["threads"][0]


def sub(p):
    """The sub-process of full.json."""
    return p["processes"][0]


class RuleTest(unittest.TestCase):
    maxDiff = None

    def issues(self, profile, **opts):
        return gecko_check.check_issues(profile, max_per_rule=0, **opts)

    def assertRule(self, profile, rule, path=None, level="error", **opts):
        """`rule` is reported at `level`, at `path` (a prefix) when given, and was not
        already reported there for the unbroken example."""
        self.assertIn(rule, gecko_check.RULES)
        issues = self.issues(profile, **opts)
        hits = [i for i in issues if i.rule == rule and i.level == level
                and (path is None or i.path.startswith(path))]
        self.assertTrue(hits, f"expected {level} [{rule}] at {path!r}; got:\n"
                        + "\n".join(map(str, issues)))
        return hits

    def assertNoRule(self, profile, rule, **opts):
        hits = [str(i) for i in self.issues(profile, **opts) if i.rule == rule]
        self.assertEqual(hits, [])


class KnownGood(RuleTest):
    def test_minimal_has_no_issue(self):
        self.assertEqual(MINIMAL["meta"]["version"], 36)
        self.assertEqual(gecko_check.check(minimal()), [])

    def test_full_has_no_error(self):
        self.assertEqual(FULL["meta"]["version"], 36)
        errors = [str(i) for i in self.issues(full()) if i.level == "error"]
        self.assertEqual(errors, [])

    def test_full_only_warns_about_schemaless_phase_markers(self):
        # full.json's "Phase" interval markers have no markerSchema entry; the front-end
        # shows them anyway, so the checker only warns.
        rules = {i.rule for i in self.issues(full())}
        self.assertEqual(rules, {"marker-type-no-schema"})

    def test_examples_pass_with_every_option(self):
        for p in (minimal(), full()):
            opts = dict(require_samples=True, no_js_shapes=True, strict_version=True)
            self.assertEqual([i for i in self.issues(p, **opts) if i.level == "error"], [])
        self.assertEqual(gecko_check.check(minimal(), expect_threads=1, expect_processes=1), [])
        errors = [i for i in self.issues(full(), expect_threads=3, expect_processes=2)
                  if i.level == "error"]
        self.assertEqual(errors, [])

    def test_check_returns_strings_with_warning_prefix(self):
        lines = gecko_check.check(full())
        self.assertTrue(lines)
        self.assertTrue(all(s.startswith("warning: ") for s in lines))
        self.assertRegex(lines[0], r"^warning: threads\[0\]\.markers\.data\[\d+\]\.data\.type: .* "
                                   r"\[marker-type-no-schema\]$")

    def test_every_rule_is_exercised(self):
        with open(os.path.abspath(__file__), encoding="utf-8") as f:
            source = f.read()
        untested = [r for r in gecko_check.RULES if f'"{r}"' not in source]
        self.assertEqual(untested, [])


class Versions(RuleTest):
    def test_meta_version_newer_than_36(self):
        p = minimal()
        p["meta"]["version"] = 37
        self.assertRule(p, "meta-version", "meta.version", strict_version=False)

    def test_meta_version_missing(self):
        p = minimal()
        del p["meta"]["version"]
        self.assertRule(p, "meta-version", "meta.version")

    def test_meta_version_string(self):
        p = minimal()
        p["meta"]["version"] = "36"
        self.assertRule(p, "meta-version", "meta.version")

    def test_meta_version_strict_35(self):
        p = minimal()
        p["meta"]["version"] = 35
        self.assertRule(p, "meta-version-strict", "meta.version")
        errors = [i for i in self.issues(p, strict_version=False) if i.level == "error"]
        self.assertEqual(errors, [])

    def test_meta_preprocessed_profile_version(self):
        p = minimal()
        p["meta"]["preprocessedProfileVersion"] = 50
        self.assertRule(p, "meta-preprocessed", "meta.preprocessedProfileVersion")

    def test_profile_wrapper_key(self):
        p = minimal()
        p["profile"] = {"meta": {}}
        self.assertRule(p, "profile-wrapper", "profile")


class TopLevel(RuleTest):
    def test_profile_type_not_object(self):
        self.assertRule([minimal()], "profile-type")

    def test_top_missing_processes(self):
        p = minimal()
        del p["processes"]
        self.assertRule(p, "top-missing", "processes")

    def test_top_missing_libs(self):
        p = minimal()
        del p["libs"]
        self.assertRule(p, "top-missing", "libs")

    def test_top_missing_meta(self):
        p = minimal()
        del p["meta"]
        self.assertRule(p, "top-missing", "meta")

    def test_top_type_processes_object(self):
        p = minimal()
        p["processes"] = {}
        self.assertRule(p, "top-type", "processes")

    def test_top_type_libs_object(self):
        p = minimal()
        p["libs"] = {}
        self.assertRule(p, "top-type", "libs")

    def test_no_threads(self):
        p = minimal()
        p["threads"] = []
        self.assertRule(p, "no-threads", "threads")

    def test_no_threads_is_fine_if_a_subprocess_has_one(self):
        p = full()
        p["threads"] = []
        del p["counters"]
        self.assertNoRule(p, "no-threads")

    def test_paused_range_reason_missing(self):
        p = minimal()
        p["pausedRanges"] = [{"startTime": 1.0, "endTime": None}]
        self.assertRule(p, "paused-range", "pausedRanges[0].reason")

    def test_json_huge(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(MINIMAL, f)
            saved = gecko_check.HUGE_JSON_BYTES
            gecko_check.HUGE_JSON_BYTES = 100
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                    rc = gecko_check.main([path])
            finally:
                gecko_check.HUGE_JSON_BYTES = saved
            self.assertEqual(rc, 0)
            self.assertIn("warning: (file): ", out.getvalue())
            rule = "json-huge"
            self.assertIn(f"[{rule}]", out.getvalue())


class Meta(RuleTest):
    def test_meta_type_not_object(self):
        p = minimal()
        p["meta"] = []
        self.assertRule(p, "meta-type", "meta")

    def test_meta_interval_zero(self):
        p = minimal()
        p["meta"]["interval"] = 0
        self.assertRule(p, "meta-interval", "meta.interval")

    def test_meta_interval_missing(self):
        p = minimal()
        del p["meta"]["interval"]
        self.assertRule(p, "meta-interval", "meta.interval")

    def test_meta_starttime_string(self):
        p = minimal()
        p["meta"]["startTime"] = "2023-11-14"
        self.assertRule(p, "meta-starttime", "meta.startTime")

    def test_meta_starttime_unit_seconds(self):
        p = minimal()
        p["meta"]["startTime"] = 1700000000.0
        self.assertRule(p, "meta-starttime-unit", "meta.startTime", level="warning")

    def test_meta_markerschema_missing(self):
        p = minimal()
        del p["meta"]["markerSchema"]
        self.assertRule(p, "meta-markerschema", "meta.markerSchema")

    def test_meta_markerschema_missing_in_subprocess(self):
        p = full()
        del sub(p)["meta"]["markerSchema"]
        self.assertRule(p, "meta-markerschema", "processes[0].meta.markerSchema")

    def test_meta_categories_missing(self):
        p = minimal()
        del p["meta"]["categories"]
        self.assertRule(p, "meta-categories", "meta.categories")

    def test_meta_categories_more_than_256(self):
        p = minimal()
        p["meta"]["categories"] += [{"name": f"C{i}", "color": "blue", "subcategories": ["Other"]}
                                    for i in range(255)]
        self.assertRule(p, "meta-categories", "meta.categories")

    def test_category_shape_bad_color(self):
        p = minimal()
        p["meta"]["categories"][1]["color"] = "pink"
        self.assertRule(p, "category-shape", "meta.categories[1].color")

    def test_category_shape_empty_subcategories(self):
        p = minimal()
        p["meta"]["categories"][1]["subcategories"] = []
        self.assertRule(p, "category-shape", "meta.categories[1].subcategories")

    def test_category_grey_missing(self):
        p = minimal()
        p["meta"]["categories"][0]["color"] = "darkgrey"
        self.assertRule(p, "category-grey", "meta.categories")

    def test_category_idle_misspelled(self):
        p = full()
        p["meta"]["categories"][0]["name"] = "idle"
        self.assertRule(p, "category-idle", "meta.categories[0].name")

    def test_sample_units_greek_mu(self):
        p = full()
        p["meta"]["sampleUnits"]["threadCPUDelta"] = "\u03bcs"
        hit = self.assertRule(p, "sample-units", "meta.sampleUnits.threadCPUDelta")
        self.assertIn("U+00B5", hit[0].message)

    def test_sample_units_time_not_ms(self):
        p = full()
        p["meta"]["sampleUnits"]["time"] = "us"
        self.assertRule(p, "sample-units", "meta.sampleUnits.time")

    def test_sample_units_missing_with_cpu_delta(self):
        p = full()
        del p["meta"]["sampleUnits"]
        self.assertRule(p, "sample-units-missing", "meta.sampleUnits")

    def test_profiling_range_only_start(self):
        p = full()
        del p["meta"]["profilingEndTime"]
        self.assertRule(p, "profiling-range", "meta.profilingStartTime")

    def test_profiling_range_end_before_start(self):
        p = full()
        p["meta"]["profilingStartTime"], p["meta"]["profilingEndTime"] = 540, 0
        self.assertRule(p, "profiling-range", "meta.profilingEndTime")

    def test_meta_field_type_presymbolicated(self):
        p = minimal()
        p["meta"]["presymbolicated"] = "yes"
        self.assertRule(p, "meta-field-type", "meta.presymbolicated", level="warning")


class SubProcesses(RuleTest):
    def test_subprocess_shape_missing_libs(self):
        p = full()
        del sub(p)["libs"]
        self.assertRule(p, "subprocess-shape", "processes[0].libs")

    def test_subprocess_shape_missing_categories(self):
        p = full()
        del sub(p)["meta"]["categories"]
        self.assertRule(p, "subprocess-shape", "processes[0].meta.categories")

    def test_subprocess_missing_starttime_gives_nan(self):
        p = full()
        del sub(p)["meta"]["startTime"]
        self.assertRule(p, "meta-starttime", "processes[0].meta.startTime")

    def test_subprocess_missing_version(self):
        p = full()
        del sub(p)["meta"]["version"]
        self.assertRule(p, "meta-version", "processes[0].meta.version")

    def test_subprocess_nested_processes(self):
        p = full()
        sub(p)["processes"] = [copy.deepcopy(sub(p))]
        self.assertRule(p, "subprocess-nested", "processes[0].processes")

    def test_subprocess_version_differs(self):
        p = full()
        sub(p)["meta"]["version"] = 35
        self.assertRule(p, "subprocess-version", "processes[0].meta.version", level="warning")

    def test_subprocess_categories_differ(self):
        p = full()
        sub(p)["meta"]["categories"][2]["color"] = "green"
        self.assertRule(p, "subprocess-categories", "processes[0].meta.categories", level="warning")

    def test_subprocess_ignored_meta_sample_units(self):
        p = full()
        sub(p)["meta"]["sampleUnits"] = {"time": "ms", "eventDelay": "ms", "threadCPUDelta": "ns"}
        self.assertRule(p, "subprocess-ignored-meta", "processes[0].meta.sampleUnits",
                        level="warning")

    def test_subprocess_frames_index_top_level_categories(self):
        p = full()
        sub(p)["meta"]["categories"].append({"name": "Extra", "color": "red",
                                             "subcategories": ["x"]})
        sub(p)["threads"][0]["frameTable"]["data"][0][6] = 4  # valid only in the sub-process list
        self.assertRule(p, "frame-category", "processes[0].threads[0].frameTable.data[0]")

    def test_geckomain_duplicate_pid(self):
        p = full()
        p["threads"][1]["name"] = "GeckoMain"
        self.assertRule(p, "geckomain-duplicate", "threads[1].name")

    def test_counters_no_geckomain(self):
        p = full()
        p["threads"][0]["name"] = "main"
        self.assertRule(p, "counters-no-geckomain", "counters")

    def test_counters_no_geckomain_in_subprocess(self):
        p = full()
        sub(p)["threads"][0]["name"] = "main"
        self.assertRule(p, "counters-no-geckomain", "processes[0].counters")

    def test_overhead_no_geckomain(self):
        p = minimal()
        p["profilerOverhead"] = {"samples": {"schema": {"time": 0}, "data": []}}
        self.assertRule(p, "overhead-no-geckomain", "profilerOverhead", level="warning")

    def test_expect_threads(self):
        self.assertRule(full(), "expect-threads", "threads", expect_threads=2)

    def test_expect_processes(self):
        self.assertRule(full(), "expect-processes", "processes", expect_processes=1)

    def test_threads_many(self):
        p = minimal()
        p["threads"] = [copy.deepcopy(t0(p)) for _ in range(16)]
        for i, th in enumerate(p["threads"]):
            th["tid"] += i
        self.assertRule(p, "threads-many", "threads", level="warning")


class Threads(RuleTest):
    def test_thread_type_not_object(self):
        p = minimal()
        p["threads"].append("worker")
        self.assertRule(p, "thread-type", "threads[1]")

    def test_thread_field_process_name_missing(self):
        p = minimal()
        del t0(p)["processName"]
        self.assertRule(p, "thread-field", "threads[0].processName")

    def test_thread_field_tid_string(self):
        p = minimal()
        t0(p)["tid"] = "4242"
        self.assertRule(p, "thread-field", "threads[0].tid")

    def test_thread_register_unregister_before_register(self):
        p = minimal()
        t0(p)["registerTime"], t0(p)["unregisterTime"] = 5, 2
        self.assertRule(p, "thread-register", "threads[0].unregisterTime")

    def test_thread_register_null(self):
        p = minimal()
        t0(p)["registerTime"] = None
        self.assertRule(p, "thread-register", "threads[0].registerTime")

    def test_string_table_non_string(self):
        p = minimal()
        t0(p)["stringTable"].append(7)
        self.assertRule(p, "string-table", "threads[0].stringTable[5]")


class Tables(RuleTest):
    def test_table_shape_stack_table_list(self):
        p = minimal()
        t0(p)["stackTable"] = []
        self.assertRule(p, "table-shape", "threads[0].stackTable")

    def test_table_schema_index_float(self):
        p = minimal()
        t0(p)["stackTable"]["schema"]["frame"] = 1.0
        self.assertRule(p, "table-schema-index", "threads[0].stackTable.schema.frame")

    def test_table_schema_index_string(self):
        p = minimal()
        t0(p)["samples"]["schema"]["time"] = "1"
        self.assertRule(p, "table-schema-index", "threads[0].samples.schema.time")

    def test_table_schema_duplicate(self):
        p = minimal()
        t0(p)["frameTable"]["schema"]["relevantForJS"] = 0
        self.assertRule(p, "table-schema-duplicate", "threads[0].frameTable.schema")

    def test_table_missing_column_event_delay(self):
        p = minimal()
        del t0(p)["samples"]["schema"]["eventDelay"]
        for row in t0(p)["samples"]["data"]:
            row.pop()
        self.assertRule(p, "table-missing-column", "threads[0].samples.schema")

    def test_table_missing_column_marker_phase(self):
        p = minimal()
        del t0(p)["markers"]["schema"]["data"]
        for row in t0(p)["markers"]["data"]:
            row.pop()
        self.assertRule(p, "table-missing-column", "threads[0].markers.schema")

    def test_table_missing_column_doc_frame_category(self):
        p = minimal()
        fr = t0(p)["frameTable"]
        del fr["schema"]["category"], fr["schema"]["subcategory"]
        fr["data"] = [row[:6] for row in fr["data"]]
        self.assertRule(p, "table-missing-column-doc", "threads[0].frameTable.schema",
                        level="warning")

    def test_table_row_length(self):
        p = minimal()
        t0(p)["stackTable"]["data"][1].append(5)
        self.assertRule(p, "table-row-length", "threads[0].stackTable.data[1]")

    def test_table_row_type(self):
        p = minimal()
        t0(p)["samples"]["data"][2] = {"stack": 1, "time": 2.0, "eventDelay": 0}
        self.assertRule(p, "table-row-type", "threads[0].samples.data[2]")

    def test_short_row_is_fine(self):
        p = minimal()
        t0(p)["frameTable"]["data"][0] = [0]  # missing columns read as null
        errors = [i for i in self.issues(p) if i.level == "error"]
        self.assertEqual(errors, [])


class Stacks(RuleTest):
    def test_stack_prefix_equal_to_own_index(self):
        p = minimal()
        t0(p)["stackTable"]["data"][1][0] = 1
        hit = self.assertRule(p, "stack-prefix", "threads[0].stackTable.data[1]")
        self.assertEqual(hit[0].message, "prefix 1 >= own index 1 (a parent stack must come first)")

    def test_stack_prefix_child_before_parent(self):
        p = minimal()
        st = t0(p)["stackTable"]
        st["data"] = [[None, 0], [2, 2], [0, 1]]
        self.assertRule(p, "stack-prefix", "threads[0].stackTable.data[1]")

    def test_stack_prefix_bool(self):
        p = minimal()
        t0(p)["stackTable"]["data"][1][0] = False
        self.assertRule(p, "stack-prefix", "threads[0].stackTable.data[1]")

    def test_stack_frame_out_of_range(self):
        p = minimal()
        t0(p)["stackTable"]["data"][2][1] = 3
        self.assertRule(p, "stack-frame", "threads[0].stackTable.data[2]")

    def test_stack_frame_float(self):
        p = minimal()
        t0(p)["stackTable"]["data"][2][1] = 2.0
        self.assertRule(p, "stack-frame", "threads[0].stackTable.data[2]")


class Frames(RuleTest):
    def test_frame_location_out_of_range(self):
        p = minimal()
        t0(p)["frameTable"]["data"][1][0] = 5
        self.assertRule(p, "frame-location", "threads[0].frameTable.data[1]")

    def test_frame_location_bool(self):
        p = minimal()
        t0(p)["frameTable"]["data"][1][0] = True
        self.assertRule(p, "frame-location", "threads[0].frameTable.data[1]")

    def test_frame_implementation_out_of_range(self):
        p = minimal()
        t0(p)["frameTable"]["data"][1][3] = 50
        self.assertRule(p, "frame-implementation", "threads[0].frameTable.data[1]")

    def test_frame_line_string(self):
        p = minimal()
        t0(p)["frameTable"]["data"][1][4] = "42"
        self.assertRule(p, "frame-line", "threads[0].frameTable.data[1]")

    def test_frame_line_column_float(self):
        p = minimal()
        t0(p)["frameTable"]["data"][1][5] = 4.5
        self.assertRule(p, "frame-line", "threads[0].frameTable.data[1]")

    def test_frame_category_out_of_range(self):
        p = minimal()
        t0(p)["frameTable"]["data"][0][6] = 2
        self.assertRule(p, "frame-category", "threads[0].frameTable.data[0]")

    def test_frame_subcategory_out_of_range(self):
        p = minimal()
        t0(p)["frameTable"]["data"][0][7] = 1  # "User" has one subcategory
        self.assertRule(p, "frame-subcategory", "threads[0].frameTable.data[0]")

    def test_frame_subcategory_null_with_category(self):
        p = minimal()
        t0(p)["frameTable"]["data"][0][7] = None
        self.assertRule(p, "frame-subcategory-null", "threads[0].frameTable.data[0]",
                        level="warning")

    def test_frame_field_type_relevant_for_js(self):
        p = minimal()
        t0(p)["frameTable"]["data"][0][1] = "no"
        self.assertRule(p, "frame-field-type", "threads[0].frameTable.data[0]", level="warning")

    def test_frame_address_lib_outside_libs(self):
        p = full()
        t0(p)["stringTable"][3] = "0x10"
        self.assertRule(p, "frame-address-lib", "threads[0].frameTable.data[3]", level="warning")

    def test_frame_address_lib_uses_own_process_libs(self):
        p = full()
        sub(p)["libs"][0]["start"], sub(p)["libs"][0]["end"] = 0x800000, 0x900000
        self.assertRule(p, "frame-address-lib", "processes[0].threads[0].frameTable.data[3]",
                        level="warning")
        self.assertFalse([i for i in self.issues(p) if i.rule == "frame-address-lib"
                          and i.path.startswith("threads[")])

    def test_frame_address_hex_invalid(self):
        p = full()
        t0(p)["stringTable"][3] = "0xZZ"
        self.assertRule(p, "frame-address-hex", "threads[0].frameTable.data[3]", level="warning")

    def test_frame_js_shape_name_file_line(self):
        p = minimal()
        t0(p)["stringTable"][1] = "compute_sum (main.c:42)"
        self.assertRule(p, "frame-js-shape", "threads[0].frameTable.data[1]", level="warning")
        self.assertRule(p, "frame-js-shape", "threads[0].frameTable.data[1]", no_js_shapes=True)

    def test_frame_js_shape_url_line(self):
        p = minimal()
        t0(p)["stringTable"][2] = "leaf.c:7"
        self.assertRule(p, "frame-js-shape", "threads[0].frameTable.data[2]", level="warning")

    def test_frame_cpp_shape_is_not_js(self):
        p = minimal()
        t0(p)["stringTable"][1] = "compute_sum (in libapp.so) (main.c:42)"
        self.assertNoRule(p, "frame-js-shape", no_js_shapes=True)


class Samples(RuleTest):
    def test_samples_missing_warning(self):
        p = minimal()
        t0(p)["samples"]["data"] = []
        self.assertRule(p, "samples-missing", "threads[0].samples", level="warning")

    def test_samples_missing_require_samples(self):
        p = full()
        p["threads"][1]["samples"]["data"] = []
        self.assertRule(p, "samples-missing", "threads[1].samples", require_samples=True)

    def test_samples_all_null_stack(self):
        p = minimal()
        for row in t0(p)["samples"]["data"]:
            row[0] = None
        self.assertRule(p, "samples-all-null-stack", "threads[0].samples", level="warning")

    def test_sample_stack_out_of_range(self):
        p = minimal()
        t0(p)["samples"]["data"][3][0] = 3
        self.assertRule(p, "sample-stack", "threads[0].samples.data[3]")

    def test_sample_time_null(self):
        p = minimal()
        t0(p)["samples"]["data"][3][1] = None
        self.assertRule(p, "sample-time", "threads[0].samples.data[3]")

    def test_sample_time_order(self):
        p = minimal()
        t0(p)["samples"]["data"][3][1] = 0.5
        self.assertRule(p, "sample-time-order", "threads[0].samples.data[3]")

    def test_sample_event_delay_string(self):
        p = minimal()
        t0(p)["samples"]["data"][3][2] = "0"
        self.assertRule(p, "sample-event-delay", "threads[0].samples.data[3]")

    def test_sample_cpu_delta_negative(self):
        p = full()
        t0(p)["samples"]["data"][5][3] = -5.0
        self.assertRule(p, "sample-cpu-delta", "threads[0].samples.data[5]")

    def test_sample_cpu_delta_all_null(self):
        p = full()
        for row in t0(p)["samples"]["data"]:
            row[3] = None
        self.assertRule(p, "sample-cpu-delta-all-null", "threads[0].samples", level="warning")

    def test_samples_out_of_range(self):
        p = full()
        p["meta"]["profilingEndTime"] = 20
        self.assertRule(p, "samples-out-of-range", "threads[0].samples", level="warning")


class Markers(RuleTest):
    def test_marker_name_out_of_range(self):
        p = minimal()
        t0(p)["markers"]["data"][1][0] = 5
        self.assertRule(p, "marker-name", "threads[0].markers.data[1]")

    def test_marker_time_type_string(self):
        p = minimal()
        t0(p)["markers"]["data"][1][1] = "2.5"
        self.assertRule(p, "marker-time-type", "threads[0].markers.data[1]")

    def test_marker_phase_4(self):
        p = minimal()
        t0(p)["markers"]["data"][1][3] = 4
        self.assertRule(p, "marker-phase", "threads[0].markers.data[1]")

    def test_marker_null_times_both_null(self):
        p = minimal()
        t0(p)["markers"]["data"][1][1] = None
        self.assertRule(p, "marker-null-times", "threads[0].markers.data[1]")

    def test_marker_null_times_end_zero(self):
        p = full()
        t0(p)["markers"]["data"][4][2] = 0.0  # phase 3, startTime null, endTime 0
        self.assertRule(p, "marker-null-times", "threads[0].markers.data[4]")

    def test_marker_phase_times_interval_end_before_start(self):
        p = minimal()
        t0(p)["markers"]["data"][0][1:3] = [4.0, 1.0]
        self.assertRule(p, "marker-phase-times", "threads[0].markers.data[0]")

    def test_marker_phase_times_interval_missing_end(self):
        p = minimal()
        t0(p)["markers"]["data"][0][2] = None
        self.assertRule(p, "marker-phase-times", "threads[0].markers.data[0]")

    def test_marker_phase_times_instant_without_start(self):
        p = minimal()
        t0(p)["markers"]["data"][1][1:3] = [None, 2.5]
        self.assertRule(p, "marker-phase-times", "threads[0].markers.data[1]")

    def test_marker_ignored_time_instant_with_end(self):
        p = minimal()
        t0(p)["markers"]["data"][1][2] = 3.0
        self.assertRule(p, "marker-ignored-time", "threads[0].markers.data[1]", level="warning")

    def test_marker_unpaired_start(self):
        p = full()
        del t0(p)["markers"]["data"][4]  # the phase-3 end of "Phase"
        self.assertRule(p, "marker-unpaired", "threads[0].markers", level="warning")

    def test_marker_category_out_of_range(self):
        p = minimal()
        t0(p)["markers"]["data"][1][4] = 2
        self.assertRule(p, "marker-category", "threads[0].markers.data[1]")

    def test_marker_category_null(self):
        p = minimal()
        t0(p)["markers"]["data"][1][4] = None
        self.assertRule(p, "marker-category", "threads[0].markers.data[1]")

    def test_marker_data_not_object(self):
        p = minimal()
        t0(p)["markers"]["data"][1][5] = ["Tick"]
        self.assertRule(p, "marker-data", "threads[0].markers.data[1]")

    def test_marker_type_no_schema(self):
        p = minimal()
        t0(p)["markers"]["data"][1][5] = {"type": "Tick"}
        self.assertRule(p, "marker-type-no-schema", "threads[0].markers.data[1].data.type",
                        level="warning")

    def test_marker_type_schema_from_subprocess_is_accepted(self):
        p = full()
        sub(p)["meta"]["markerSchema"].append({"name": "Phase", "display": ["marker-chart"],
                                              "data": []})
        self.assertNoRule(p, "marker-type-no-schema")

    def test_marker_string_index_given_a_string(self):
        p = full()
        t0(p)["markers"]["data"][0][5]["what"] = "parse-config"
        self.assertRule(p, "marker-string-index", "threads[0].markers.data[0].data.what")

    def test_marker_string_index_out_of_range(self):
        p = full()
        sub(p)["threads"][0]["markers"]["data"][1][5]["what"] = 13
        self.assertRule(p, "marker-string-index",
                        "processes[0].threads[0].markers.data[1].data.what")

    def test_marker_field_format_bytes_string(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["bytes"] = "1 KiB"
        self.assertRule(p, "marker-field-format", "threads[0].markers.data[0].data.bytes",
                        level="warning")

    def test_marker_stack_bad_stack_index(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {
            "samples": {"schema": {"stack": 0, "time": 1}, "data": [[3, 1.0]]}}
        self.assertRule(p, "marker-stack", "threads[0].markers.data[0].data.stack")

    def test_marker_stack_samples_without_data(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {"samples": {"schema": {"stack": 0, "time": 1}}}
        self.assertRule(p, "marker-stack", "threads[0].markers.data[0].data.stack.samples")

    def test_marker_stack_good_backtrace(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {
            "tid": 4242, "samples": {"schema": {"stack": 0, "time": 1}, "data": [[2, 1.0]]}}
        self.assertEqual(gecko_check.check(p), [])

    def test_marker_cause_with_its_backtrace(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {
            "tid": 4242, "samples": {"schema": {"stack": 0, "time": 1}, "data": [[2, 1.0]]}}
        t0(p)["markers"]["data"][0][5]["cause"] = {"tid": 4242, "time": 1.0, "stack": 2}
        self.assertEqual(gecko_check.check(p), [])

    def test_marker_cause_bad_stack_index(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {
            "samples": {"schema": {"stack": 0, "time": 1}, "data": [[2, 1.0]]}}
        t0(p)["markers"]["data"][0][5]["cause"] = {"time": 1.0, "stack": 3}
        self.assertRule(p, "marker-cause", "threads[0].markers.data[0].data.cause.stack")

    def test_marker_cause_without_stack(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["cause"] = {"time": 1.0}
        self.assertRule(p, "marker-cause", "threads[0].markers.data[0].data.cause")

    def test_marker_cause_time_string(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["cause"] = {"time": "1 ms", "stack": 1}
        self.assertRule(p, "marker-cause", "threads[0].markers.data[0].data.cause.time")

    def test_marker_cause_alone(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["cause"] = {"time": 1.0, "stack": 1}
        self.assertRule(p, "marker-cause-alone", "threads[0].markers.data[0].data.cause",
                        level="warning")

    def test_marker_cause_mismatch(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = {
            "samples": {"schema": {"stack": 0, "time": 1}, "data": [[2, 1.0]]}}
        t0(p)["markers"]["data"][0][5]["cause"] = {"time": 1.0, "stack": 1}
        self.assertRule(p, "marker-cause-mismatch",
                        "threads[0].markers.data[0].data.cause.stack")

    def test_marker_stack_shape_text(self):
        p = minimal()
        t0(p)["markers"]["data"][0][5]["stack"] = "main > compute_sum"
        self.assertRule(p, "marker-stack-shape", "threads[0].markers.data[0].data.stack",
                        level="warning")

    def test_markers_out_of_range(self):
        p = minimal()
        t0(p)["markers"]["data"][1][1] = 1000.0
        self.assertRule(p, "markers-out-of-range", "threads[0].markers.data[1]", level="warning")


class MarkerSchemas(RuleTest):
    def test_schema_entry_name_missing(self):
        p = minimal()
        del p["meta"]["markerSchema"][0]["name"]
        self.assertRule(p, "schema-entry", "meta.markerSchema[0].name")

    def test_schema_duplicate_name(self):
        p = minimal()
        p["meta"]["markerSchema"].append(copy.deepcopy(p["meta"]["markerSchema"][0]))
        self.assertRule(p, "schema-duplicate", "meta.markerSchema[1].name", level="warning")

    def test_schema_display_unknown_place(self):
        p = minimal()
        p["meta"]["markerSchema"][0]["display"].append("sidebar")
        self.assertRule(p, "schema-display", "meta.markerSchema[0].display[3]")

    def test_schema_display_missing(self):
        p = minimal()
        del p["meta"]["markerSchema"][0]["display"]
        self.assertRule(p, "schema-display", "meta.markerSchema[0].display")

    def test_schema_data_missing(self):
        p = minimal()
        del p["meta"]["markerSchema"][0]["data"]
        self.assertRule(p, "schema-data", "meta.markerSchema[0].data")

    def test_schema_data_field_without_key_or_value(self):
        p = minimal()
        p["meta"]["markerSchema"][0]["data"].append({"label": "Oops"})
        self.assertRule(p, "schema-data", "meta.markerSchema[0].data[3]")

    def test_schema_format_unknown(self):
        p = full()
        p["meta"]["markerSchema"][0]["data"][0]["format"] = "unique_string"
        self.assertRule(p, "schema-format", "meta.markerSchema[0].data[0].format")

    def test_schema_label_not_string(self):
        p = minimal()
        p["meta"]["markerSchema"][0]["tooltipLabel"] = 5
        self.assertRule(p, "schema-label", "meta.markerSchema[0].tooltipLabel")

    def test_schema_label_placeholder_unknown_key(self):
        p = minimal()
        p["meta"]["markerSchema"][0]["chartLabel"] = "{marker.data.nothere}"
        self.assertRule(p, "schema-label-placeholder", "meta.markerSchema[0].chartLabel",
                        level="warning")

    def test_schema_graphs_key_not_a_data_key(self):
        p = full()
        p["meta"]["markerSchema"][1]["graphs"][0]["key"] = "queue"
        self.assertRule(p, "schema-graphs", "meta.markerSchema[1].graphs[0].key")

    def test_schema_graphs_not_array(self):
        p = full()
        p["meta"]["markerSchema"][1]["graphs"] = {"key": "depth", "type": "line"}
        self.assertRule(p, "schema-graphs", "meta.markerSchema[1].graphs")

    def test_schema_graph_type_unknown(self):
        p = full()
        p["meta"]["markerSchema"][1]["graphs"][0]["type"] = "pie"
        self.assertRule(p, "schema-graph-type", "meta.markerSchema[1].graphs[0].type",
                        level="warning")

    def test_schema_color_field_not_a_data_key(self):
        p = full()
        p["meta"]["markerSchema"][1]["colorField"] = "colour"
        self.assertRule(p, "schema-color-field", "meta.markerSchema[1].colorField")

    def test_marker_color_not_a_graph_color(self):
        # msgpack2gecko's "lightblue" category colour is no GraphColor: drawn blue.
        p = full()
        p["meta"]["markerSchema"][1]["data"].append(
            {"key": "color", "format": "string", "hidden": True})
        p["meta"]["markerSchema"][1]["colorField"] = "color"
        t0(p)["markers"]["data"][5][5]["color"] = "lightblue"
        self.assertRule(p, "marker-color", "threads[0].markers.data[5].data.color",
                        level="warning")
        t0(p)["markers"]["data"][5][5]["color"] = "teal"
        self.assertNoRule(p, "marker-color")

    def test_marker_graph_key_missing(self):
        p = full()
        del t0(p)["markers"]["data"][5][5]["depth"]
        self.assertRule(p, "marker-graph-keys", "threads[0].markers.data[5].data.depth",
                        level="warning")


class Libs(RuleTest):
    def test_libs_entry_start_string(self):
        p = full()
        p["libs"][0]["start"] = "0x400000"
        self.assertRule(p, "libs-entry", "libs[0].start")

    def test_libs_entry_offset_float(self):
        p = full()
        p["libs"][0]["offset"] = 0.5
        self.assertRule(p, "libs-entry", "libs[0].offset")

    def test_libs_entry_missing_breakpad_id(self):
        p = full()
        del sub(p)["libs"][0]["breakpadId"]
        self.assertRule(p, "libs-entry", "processes[0].libs[0].breakpadId")

    def test_libs_entry_start_after_end(self):
        p = full()
        p["libs"][0]["end"] = p["libs"][0]["start"]
        self.assertRule(p, "libs-entry", "libs[0]")

    def test_libs_order_overlap(self):
        p = full()
        lib = copy.deepcopy(p["libs"][0])
        lib["start"], lib["end"], lib["name"] = 0x4FF000, 0x600000, "libb.so"
        p["libs"].append(lib)
        self.assertRule(p, "libs-order", "libs[1].start")

    def test_libs_order_unsorted(self):
        p = full()
        lib = copy.deepcopy(p["libs"][0])
        lib["start"], lib["end"], lib["name"] = 0x100000, 0x200000, "liba.so"
        p["libs"].append(lib)
        self.assertRule(p, "libs-order", "libs[1].start")

    def test_libs_precision_above_2_53(self):
        p = full()
        p["libs"][0]["start"], p["libs"][0]["end"] = 2 ** 60, 2 ** 60 + 4096
        self.assertRule(p, "libs-precision", "libs[0].start", level="warning")


class Counters(RuleTest):
    def test_counter_shape_description_missing(self):
        p = full()
        del p["counters"][0]["description"]
        self.assertRule(p, "counter-shape", "counters[0].description")

    def test_counter_shape_samples_missing_count(self):
        p = full()
        del p["counters"][0]["samples"]["schema"]["count"]
        self.assertRule(p, "table-missing-column", "counters[0].samples.schema")

    def test_counter_empty(self):
        p = full()
        sub(p)["counters"][0]["samples"]["data"] = []
        self.assertRule(p, "counter-empty", "processes[0].counters[0].samples.data")

    def test_counter_value_count_string(self):
        p = full()
        p["counters"][0]["samples"]["data"][2][1] = "64k"
        self.assertRule(p, "counter-value", "counters[0].samples.data[2]")

    def test_counter_time_order(self):
        p = full()
        p["counters"][0]["samples"]["data"][2][0] = 0.5
        self.assertRule(p, "counter-time-order", "counters[0].samples.data[2]")


def rtprof():
    """minimal.json as msgpack2gecko would write it: its gathering log names the converter
    and flags thread 4242 real-time, the thread is named for the audio rule, a gauge is a
    marker graph track and the memory counter starts at 0; one Idle category."""
    p = minimal()
    p["meta"]["categories"].append({"name": "Idle", "color": "transparent",
                                    "subcategories": ["Other"]})
    p["profileGatheringLog"] = {"converter": "msgpack2gecko (rtprof)",
                                "threads": [{"tid": 4242, "realTime": True}]}
    th = t0(p)
    th["name"] = "Audio"
    p["meta"]["markerSchema"].append({
        "name": "rtprof.counter.voices", "display": [], "chartLabel": "{marker.data.value}",
        "data": [{"key": "value", "label": "Value", "format": "integer"}],
        "graphs": [{"key": "value", "type": "line", "color": "blue"}]})
    th["stringTable"].append("voices")
    th["markers"]["data"].append([len(th["stringTable"]) - 1, 0.0, 2.0, 1, 0,
                                  {"type": "rtprof.counter.voices", "value": 4}])
    p["counters"] = [{"name": "rtprof memory", "category": "Memory", "description": "bytes",
                      "samples": {"schema": {"time": 0, "count": 1},
                                  "data": [[0.0, 0], [1.0, 4096]]}}]
    return p


def sampler(p, idle=True, cpu=0):
    """Adds an "rtprof sampler" thread (flagged in the gathering log) whose one sample is
    Idle or not, with @cpu ns of CPU delta."""
    th = copy.deepcopy(t0(p))
    th.update(name="rtprof sampler", tid=4243, markers={"schema": th["markers"]["schema"],
                                                        "data": []})
    th["frameTable"]["data"] = [[0, False, None, None, None, None, 2 if idle else 0, 0]]
    th["stackTable"]["data"] = [[None, 0]]
    th["samples"] = {"schema": {"stack": 0, "time": 1, "eventDelay": 2, "threadCPUDelta": 3},
                     "data": [[0, 0.0, 0, cpu]]}
    p["meta"]["sampleUnits"] = {"time": "ms", "eventDelay": "ms", "threadCPUDelta": "ns"}
    p["threads"].append(th)
    p["profileGatheringLog"]["threads"].append({"tid": 4243, "sampler": True})
    return th


class Rtprof(RuleTest):
    def test_rtprof_example_passes(self):
        p = rtprof()
        sampler(p)
        self.assertEqual([str(i) for i in self.issues(p) if i.rule.startswith("rtprof")], [])

    def test_rtprof_rules_need_the_converter(self):
        p = rtprof()
        t0(p)["name"] = "rt"
        del p["profileGatheringLog"]
        self.assertNoRule(p, "rtprof-rt-visible")

    def test_rtprof_rt_visible(self):
        p = rtprof()
        t0(p)["name"] = "rt"
        self.assertRule(p, "rtprof-rt-visible", "threads[0].name")
        t0(p)["name"] = "Audio RT: rt"
        self.assertNoRule(p, "rtprof-rt-visible")

    def test_rtprof_gauge_track_no_graph(self):
        p = rtprof()
        p["meta"]["markerSchema"][-1]["graphs"] = []
        self.assertRule(p, "rtprof-gauge-track", "meta.markerSchema")

    def test_rtprof_gauge_track_no_unit(self):
        p = rtprof()
        p["meta"]["markerSchema"][-1]["data"][0]["format"] = "string"
        self.assertRule(p, "rtprof-gauge-track", "meta.markerSchema")

    def test_rtprof_gauge_track_no_markers(self):
        p = rtprof()
        t0(p)["markers"]["data"].pop()
        self.assertRule(p, "rtprof-gauge-track", "meta.markerSchema")

    def test_rtprof_gauge_counter(self):
        p = rtprof()
        p["counters"][0]["category"] = "Audio"
        self.assertRule(p, "rtprof-gauge-counter", "counters[0]")

    def test_rtprof_memory_zero(self):
        p = rtprof()
        p["counters"][0]["samples"]["data"][0][1] = 4096
        self.assertRule(p, "rtprof-memory-zero", "counters[0].samples.data[0]")

    def test_rtprof_sampler_hidden_not_idle(self):
        p = rtprof()
        sampler(p, idle=False)
        self.assertRule(p, "rtprof-sampler-hidden", "threads[1].samples.data[0]")

    def test_rtprof_sampler_hidden_cpu(self):
        p = rtprof()
        sampler(p, cpu=1000)
        self.assertRule(p, "rtprof-sampler-hidden", "threads[1].samples")

    def test_rtprof_overhead_rate(self):
        p = rtprof()
        th = t0(p)
        th["stringTable"].append("Profiler overhead")
        name = len(th["stringTable"]) - 1
        for k in range(12):
            th["markers"]["data"].append([name, 90.0 * k, 90.0 * k + 1, 1, 0, None])
        self.assertRule(p, "rtprof-overhead-rate", "threads[0].markers")
        for k, row in enumerate(th["markers"]["data"][-12:]):
            row[1], row[2] = 101.0 * k, 101.0 * k + 1
        self.assertNoRule(p, "rtprof-overhead-rate")
        th["markers"]["data"][-1][2] = th["markers"]["data"][-1][1] + 150
        self.assertRule(p, "rtprof-overhead-rate", "threads[0].markers")
        # One tick that itself lasted 150 ms (its lock wait under load)
        # is what happened; a window of several ticks that long is not.
        th["markers"]["data"][-1][5] = {"type": "rtprof-overhead", "ticks": 1}
        self.assertNoRule(p, "rtprof-overhead-rate")
        th["markers"]["data"][-1][5]["ticks"] = 3
        self.assertRule(p, "rtprof-overhead-rate", "threads[0].markers")


class CommandLine(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def write(self, name, profile=None, text=None, gz=False):
        data = (text if text is not None else json.dumps(profile)).encode("utf-8")
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if gz else data)
        return path

    def run_checker(self, *args):
        r = subprocess.run([sys.executable, CHECKER, *args], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def test_good_files_exit_0(self):
        rc, out, err = self.run_checker(os.path.join(EXAMPLES, "minimal.json"),
                                        os.path.join(EXAMPLES, "full.json"))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("0 error(s)", err)

    def test_werror_makes_warnings_fail(self):
        rc, out, _ = self.run_checker("--werror", os.path.join(EXAMPLES, "full.json"))
        self.assertEqual(rc, 1)
        self.assertIn("warning: ", out)

    def test_violation_line_format_and_exit_1(self):
        p = minimal()
        t0(p)["stackTable"]["data"][2][0] = 2
        path = self.write("out.json", p)
        rc, out, _ = self.run_checker(path)
        self.assertEqual(rc, 1)
        self.assertIn(f"{path}: threads[0].stackTable.data[2]: prefix 2 >= own index 2 "
                      "(a parent stack must come first) [stack-prefix]\n", out)
        for line in out.splitlines():
            self.assertRegex(line, r"^" + re.escape(path)
                                  + r": (warning: )?\S+: .+ \[[a-z0-9-]+\]$")

    def test_gzip_sniffed_by_magic_not_name(self):
        p = minimal()
        t0(p)["samples"]["data"][3][0] = 9
        path = self.write("looks-plain.json", p, gz=True)
        rc, out, _ = self.run_checker(path)
        self.assertEqual(rc, 1)
        self.assertIn("[sample-stack]", out)
        good = self.write("good.json.gz", MINIMAL, gz=False)  # .gz name, plain content
        self.assertEqual(self.run_checker(good)[0], 0)

    def test_invalid_json_exit_2(self):
        rc, _, err = self.run_checker(self.write("bad.json", text='{"meta": '))
        self.assertEqual(rc, 2)
        self.assertIn("invalid JSON", err)

    def test_nan_is_not_json_exit_2(self):
        text = json.dumps(MINIMAL).replace('"interval": 1', '"interval": NaN')
        self.assertEqual(self.run_checker(self.write("nan.json", text=text))[0], 2)

    def test_missing_file_and_bad_gzip_exit_2(self):
        self.assertEqual(self.run_checker(os.path.join(self.dir, "nope.json"))[0], 2)
        bad = self.write("trunc.json", text="")
        with open(bad, "wb") as f:
            f.write(gzip.compress(json.dumps(MINIMAL).encode())[:40])
        self.assertEqual(self.run_checker(bad)[0], 2)

    def test_exit_2_wins_over_1(self):
        p = minimal()
        p["meta"]["interval"] = -1
        rc, _, _ = self.run_checker(self.write("b.json", p), self.write("c.json", text="x"))
        self.assertEqual(rc, 2)

    def test_quiet_prints_errors_only(self):
        p = full()
        p["meta"]["interval"] = 0
        rc, out, err = self.run_checker("--quiet", self.write("q.json", p))
        self.assertEqual(rc, 1)
        self.assertEqual(err, "")
        self.assertIn("[meta-interval]", out)
        self.assertNotIn("warning:", out)

    def test_any_version_and_strict_version(self):
        p = minimal()
        p["meta"]["version"] = 30
        path = self.write("v30.json", p)
        self.assertEqual(self.run_checker(path)[0], 1)
        self.assertEqual(self.run_checker("--strict-version", path)[0], 1)
        self.assertEqual(self.run_checker("--any-version", path)[0], 0)

    def test_expect_threads_processes_require_samples(self):
        fullp = os.path.join(EXAMPLES, "full.json")
        self.assertEqual(self.run_checker("--expect-threads", "3", "--expect-processes", "2",
                                          "--require-samples", fullp)[0], 0)
        rc, out, _ = self.run_checker("--expect-threads", "4", fullp)
        self.assertEqual(rc, 1)
        self.assertIn("[expect-threads]", out)
        p = minimal()
        t0(p)["samples"]["data"] = []
        path = self.write("nosamples.json", p)
        self.assertEqual(self.run_checker(path)[0], 0)
        self.assertEqual(self.run_checker("--require-samples", path)[0], 1)

    def test_max_per_rule_suppresses(self):
        p = minimal()
        for row in t0(p)["samples"]["data"]:
            row[0] = 99
        rc, out, _ = self.run_checker("--max-per-rule", "2", self.write("many.json", p))
        self.assertEqual(rc, 1)
        self.assertEqual(out.count("[sample-stack]"), 3)
        self.assertIn("... 4 more suppressed [sample-stack]", out)

    def test_list_rules(self):
        rc, out, _ = self.run_checker("--list-rules")
        self.assertEqual(rc, 0)
        self.assertEqual(len(out.splitlines()), len(gecko_check.RULES))


if __name__ == "__main__":
    unittest.main(verbosity=1)
