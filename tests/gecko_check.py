#!/usr/bin/env python3
"""gecko_check.py - check a Firefox Profiler "Gecko" profile (as msgpack2gecko writes it).

Source of the rules: /work/shared/docs/gecko-format.md ("The Gecko profile format, as the
Firefox Profiler reads it today"), which was checked against the front-end's import code
(firefox-devtools/profiler: src/profile-logic/process-profile.ts,
gecko-profile-versioning.ts, address-locator.ts, marker-schema.ts). Where the doc is silent
but the import code is explicit, the code's behaviour is enforced too and the rule says so.

The point is to catch profiles that load with no error and still show nothing, so rules the
front-end accepts silently are enforced as well. Every report carries a rule id in brackets;
`--list-rules` prints them all with their level.

    python3 tests/gecko_check.py [options] PROFILE.json[.gz] [...]

  * gzip is sniffed by its magic bytes (1f 8b), not by the file name;
  * each violation is printed on stdout as one line  `FILE: path.to.field: message [rule]`,
    warnings as  `FILE: warning: path.to.field: message [rule]`;
  * exit status: 0 no error, 1 at least one error (or warning with --werror),
    2 a file is unreadable / not gzip / not UTF-8 / not JSON (NaN and Infinity are not JSON:
    the browser's JSON.parse rejects them) - 2 wins over 1;
  * a per-file summary goes to stderr unless --quiet; --quiet also hides warnings;
  * at most --max-per-rule reports (default 20) per rule and per thread/process are printed,
    then one "... more suppressed" line.

Options: --require-samples (a thread with no sample is an error, not a warning),
--expect-threads N (threads in the whole profile, sub-processes included),
--expect-processes N (distinct `pid`s over all threads: the front-end groups tracks by pid),
--strict-version (default: meta.version must be exactly 36) / --any-version (<= 36),
--no-js-shapes (JavaScript-shaped frame locations become errors), --werror.

Importable:  check(profile_dict, **options) -> list[str]  (errors as "path: message [rule]",
warnings prefixed "warning: "); check_issues() returns Issue objects; load_profile(path)
reads a file the way the CLI does.

What is checked (see RULES below for the ids):
  versions      meta.version number <= 36 (== 36 unless --any-version); no
                meta.preprocessedProfileVersion; no truthy top-level `profile` key (the front-end
                would read that object instead).
  top level     meta, threads, processes (array), libs (array); >= 1 thread overall; optional
                pausedRanges / pages / counters / logs shaped as documented.
  meta          interval > 0; startTime number (warning if it does not look like epoch ms);
                markerSchema array (top and every sub-process); categories (list of {name,
                color from the allowed list, non-empty subcategories}, <= 256, >= 1 grey,
                an idle category spelled exactly "Idle"); sampleUnits {time "ms", eventDelay
                "ms", threadCPUDelta ns | µs (U+00B5) | "variable CPU cycles"}, required when
                any thread has threadCPUDelta; profilingStartTime/EndTime both or none, ordered.
  threads       name, processType, processName (strings), tid, pid (integers), registerTime
                number, unregisterTime number|null >= registerTime, stringTable (strings),
                samples / markers / stackTable / frameTable tables.
  tables        {schema: {column: int}, data: [rows]}: integer, unique column indexes, rows are
                arrays no longer than the largest index + 1, required columns present.
  stackTable    prefix null or int < own index; frame a valid frameTable index.
  frameTable    location a valid stringTable index; implementation null or string index;
                line/column null or int; category/subcategory null or valid indexes into the
                top-level meta.categories (the only list the front-end reads, also for
                sub-processes) - warnings when only one of the two is null.
  locations     `0x...` must be hex and (when libs is non-empty) inside a lib of the thread's
                process (warning); JavaScript-shaped strings (`name (file:line)`, `url:line`,
                matched with the front-end's own regexps) are warnings, errors with
                --no-js-shapes.
  samples       stack, time, eventDelay columns; stack null or valid; time numbers,
                non-decreasing; eventDelay null or number; threadCPUDelta null or >= 0 (warning
                when all null: the front-end drops the column); no samples -> warning (error
                with --require-samples); samples all outside the profiling range -> warning.
  markers       columns name, startTime, endTime, phase, category, data; name a string index;
                phase 0..3 with the times each phase needs (interval end >= start); never
                `endTime || startTime` null (crashes _sortMarkers, so endTime 0 with a null
                startTime too); category a valid index; data null or object; data.type must
                name a marker schema (warning: the front-end shows such markers without one);
                unique-string / flow-id / terminating-flow-id fields are string indexes;
                numeric formats hold numbers (warning); a `stack` field is a one-sample
                backtrace whose stack index is valid; a `cause` {stack, time?, tid?} has a
                valid stack index, comes with a `stack` backtrace (the front-end rebuilds
                `cause` from it, re-based onto its merged stack table; a `cause` alone is not
                re-based, so it is only right for the first thread: warning) naming the same
                stack; unpaired phase 2/3 markers and markers outside the visible range are
                warnings.
  markerSchema  name, display (allowed places), data ({key, label?, format (allowed),
                searchable?, hidden?} or {label, value}), graphs [{key among the data keys,
                type, color}], labels using {marker.name|duration|data.KEY} (warnings).
  libs          integer start/end/offset, strings name/path/debugName/debugPath/breakpadId/
                arch; start < end; sorted by start; non-overlapping.
  counters      name, category, description, samples {time, count[, number]} with >= 1 row,
                times ascending; only on a process object that has a GeckoMain thread.
  processes     GeckoMain at most once per pid; every sub-process has meta.version,
                meta.startTime (number), categories, markerSchema, threads, libs, and no
                nested processes.
  rtprof        for a profile msgpack2gecko wrote (profileGatheringLog.converter), what the
                front-end opens with (tracks.ts): a thread the gathering log says is
                real-time (but GeckoMain, the process track) has a name the audio rule matches (/^(Audio|Media|GraphRunner|
                WebrtcWorker)/: kept visible, ranked 40x for the selection); a counter that
                is not Memory is a marker schema "rtprof.counter.NAME" with a graph of
                `value` in a unit's format and markers of that name (a Gecko counter would
                be drawn as a rate), never a Gecko counter; a Memory counter starts with a
                0 row; the sampler thread (gathering log "sampler", or named "rtprof
                sampler") has no CPU and only Idle samples (its activity is 0: hidden);
                "Profiler overhead" markers last at most 100 ms each and start more than
                1 s apart every 11 of them (one per 100 ms window).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import zlib
from dataclasses import dataclass

GECKO_VERSION = 36
MAX_CATEGORIES = 256
MAX_DEFAULT_VISIBLE_THREADS = 15
HUGE_JSON_BYTES = 500_000_000

CATEGORY_COLORS = frozenset([
    "transparent", "purple", "green", "orange", "yellow", "lightblue", "blue", "brown",
    "magenta", "red", "lightred", "darkgrey", "grey",
])
CPU_DELTA_UNITS = frozenset(["ns", "\u00b5s", "variable CPU cycles"])
DISPLAY_LOCATIONS = frozenset([
    "marker-chart", "marker-table", "timeline-overview", "timeline-memory", "timeline-ipc",
    "timeline-fileio", "timeline-network", "stack-chart",
])
MARKER_FORMATS = frozenset([
    "url", "file-path", "sanitized-string", "string", "unique-string", "flow-id",
    "terminating-flow-id", "duration", "time", "seconds", "milliseconds", "microseconds",
    "nanoseconds", "bytes", "percentage", "integer", "decimal", "hexadecimal", "pid", "tid",
    "list",
])
STRING_INDEX_FORMATS = frozenset(["unique-string", "flow-id", "terminating-flow-id"])
NUMERIC_FORMATS = frozenset([
    "duration", "time", "seconds", "milliseconds", "microseconds", "nanoseconds", "bytes",
    "percentage", "integer", "decimal",
])
GRAPH_TYPES = frozenset(["bar", "line", "line-filled"])  # front-end MarkerGraphType
# front-end GraphColor (src/types/profile.ts): what a marker schema's colorField may hold;
# the marker chart draws any other value in its default blue (Canvas.tsx, _getMarkerColors)
GRAPH_COLORS = frozenset(["blue", "green", "grey", "ink", "magenta", "orange", "purple", "red",
                          "teal", "yellow"])
LIB_INT_FIELDS = ("start", "end", "offset")
LIB_STR_FIELDS = ("name", "path", "debugName", "debugPath", "breakpadId", "arch")
FRAME_COLUMNS = ("location", "relevantForJS", "innerWindowID", "implementation", "line",
                 "column", "category", "subcategory")
MARKER_COLUMNS = ("name", "startTime", "endTime", "phase", "category", "data")
LABEL_KEYS = ("tooltipLabel", "tableLabel", "chartLabel")

# The front-end's classification of frame location strings
# (extractFuncsAndResourcesFromFrameLocations in process-profile.ts), in its order:
# "0x..." address, then C++ "name (in lib)", then JavaScript, else a plain name.
_CPP_RES = [re.compile(p, re.ASCII) for p in (
    r"(.*) \(in ([^)]*)\) (\+ [0-9]+)",
    r"(.*) \(in ([^)]*)\) (\(.*:.*\))",
    r"(.*) \(in ([^)]*)\)",
)]
_JS_RES = [re.compile(p, re.ASCII) for p in (
    r"(.*) \((.+?):([0-9]+)(?::([0-9]+))?\)(?:\[(\d+)\])?",
    r"()(.+?):([0-9]+)(?::([0-9]+))?(?:\[(\d+)\])?",
)]
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+", re.ASCII)
_PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")

# rule id -> (level, what it checks). Levels marked "warning*" become errors with an option.
RULES = {
    # files and top level
    "json-huge": ("warning", "JSON text of ~500 MB or more fails to parse in the browser"),
    "profile-type": ("error", "the profile is a JSON object"),
    "profile-wrapper": ("error", "no truthy top-level `profile` key (it would be loaded instead)"),
    "top-missing": ("error", "meta, threads, processes, libs present at top level"),
    "top-type": ("error", "threads/processes/libs/counters/... arrays, logs objects"),
    "no-threads": ("error", "at least one thread in the whole profile"),
    "paused-range": ("error", "pausedRanges entries {startTime, endTime: number|null, reason}"),
    # meta
    "meta-type": ("error", "meta is an object"),
    "meta-version": ("error", "meta.version is a number <= 36"),
    "meta-version-strict": ("error", "meta.version is exactly 36 (--strict-version, the default)"),
    "meta-preprocessed": ("error", "no meta.preprocessedProfileVersion"),
    "meta-interval": ("error", "meta.interval is a number > 0"),
    "meta-starttime": ("error", "meta.startTime is a number (top level and sub-processes)"),
    "meta-starttime-unit": ("warning", "meta.startTime looks like ms since the Unix epoch"),
    "meta-markerschema": ("error", "meta.markerSchema is an array (top level and sub-processes)"),
    "meta-categories": ("error", "meta.categories present: an array of at most 256 categories"),
    "category-shape": ("error", "category {name, color (allowed list), subcategories: [str, ...]}"),
    "category-grey": ("error", "at least one grey category"),
    "category-idle": ("error", "an idle category is named exactly `Idle`"),
    "sample-units": ("error", "sampleUnits {time: ms, eventDelay: ms, threadCPUDelta: ns|µs|...}"),
    "sample-units-missing": ("error", "meta.sampleUnits present when a thread has threadCPUDelta"),
    "profiling-range": ("error", "profilingStartTime/EndTime both or none, numbers, start <= end"),
    "meta-field-type": ("warning", "known meta fields have their documented types"),
    # sub-processes and processes
    "subprocess-shape": ("error", "sub-process has meta, threads, libs; meta.version, categories"),
    "subprocess-nested": ("error", "a sub-process has no (non-empty) processes of its own"),
    "subprocess-version": ("warning", "sub-process meta.version equals the top-level one"),
    "subprocess-categories": ("warning", "sub-process categories equal the top-level ones"),
    "subprocess-ignored-meta": ("warning", "no sub-process meta key the front-end ignores"),
    "geckomain-duplicate": ("error", "at most one GeckoMain thread per pid"),
    "counters-no-geckomain": ("error", "counters only on a process object with a GeckoMain thread"),
    "overhead-no-geckomain": ("warning", "profilerOverhead only where there is a GeckoMain thread"),
    "threads-many": ("warning", "at most 15 threads are shown by default"),
    "expect-threads": ("error", "--expect-threads N: number of threads"),
    "expect-processes": ("error", "--expect-processes N: number of distinct pids"),
    # threads and tables
    "thread-type": ("error", "a thread is an object"),
    "thread-field": ("error", "thread name/processType/processName strings, tid/pid integers"),
    "thread-register": ("error", "registerTime number; unregisterTime null or >= registerTime"),
    "string-table": ("error", "stringTable is an array of strings"),
    "table-shape": ("error", "table is {schema: object, data: array}"),
    "table-schema-index": ("error", "schema values are integer column indexes >= 0"),
    "table-schema-duplicate": ("error", "no two columns share an index"),
    "table-missing-column": ("error", "required columns present in the schema"),
    "table-missing-column-doc": ("warning", "frameTable has all the documented columns"),
    "table-row-type": ("error", "table rows are arrays"),
    "table-row-length": ("error", "no row longer than the largest column index + 1"),
    # stacks and frames
    "stack-prefix": ("error", "stack prefix is null or an integer < own index"),
    "stack-frame": ("error", "stack frame is a valid frameTable index"),
    "frame-location": ("error", "frame location is a valid stringTable index"),
    "frame-implementation": ("error", "frame implementation is null or a stringTable index"),
    "frame-line": ("error", "frame line/column are null or integers"),
    "frame-category": ("error", "frame category is null or a valid meta.categories index"),
    "frame-subcategory": ("error", "frame subcategory null or < its category's subcategories"),
    "frame-subcategory-null": ("warning", "category and subcategory both null or both set"),
    "frame-field-type": ("warning", "relevantForJS boolean, innerWindowID number (or null)"),
    "frame-address-hex": ("warning", "a `0x` location is a valid hex number"),
    "frame-address-lib": ("warning", "a `0x` address is inside a libs entry (libs non-empty)"),
    "frame-js-shape": ("warning*", "no JavaScript-shaped location (error with --no-js-shapes)"),
    # samples
    "samples-missing": ("warning*", "a thread has >= 1 sample (error with --require-samples)"),
    "samples-all-null-stack": ("warning", "not every sample has a null stack"),
    "sample-stack": ("error", "sample stack is null or a valid stackTable index"),
    "sample-time": ("error", "sample time is a number"),
    "sample-time-order": ("error", "sample times are non-decreasing"),
    "sample-event-delay": ("error", "sample eventDelay is null or a number"),
    "sample-cpu-delta": ("error", "threadCPUDelta values are null or numbers >= 0"),
    "sample-cpu-delta-all-null": ("warning", "threadCPUDelta not all null (else it is dropped)"),
    "samples-out-of-range": ("warning", "samples inside profilingStartTime..profilingEndTime"),
    # markers
    "marker-name": ("error", "marker name is a valid stringTable index"),
    "marker-time-type": ("error", "marker times are null or numbers"),
    "marker-phase": ("error", "marker phase is an integer 0..3"),
    "marker-null-times": ("error", "`endTime || startTime` is not null (the import crashes)"),
    "marker-phase-times": ("error", "0/2 have startTime, 1 both (end >= start), 3 endTime"),
    "marker-ignored-time": ("warning", "no time the marker's phase ignores"),
    "marker-unpaired": ("warning", "phase 2/3 markers pair up by name"),
    "marker-category": ("error", "marker category is a valid meta.categories index"),
    "marker-data": ("error", "marker data is null or an object; data.type a string"),
    "marker-type-no-schema": ("warning", "data.type names a meta.markerSchema entry"),
    "marker-string-index": ("error", "unique-string / flow-id values are valid string indexes"),
    "marker-field-format": ("warning", "numeric-format fields hold numbers"),
    "marker-stack": ("error", "a backtrace `stack` {samples: {schema, data}} has a valid stack"),
    "marker-stack-shape": ("warning", "a `stack` field is a backtrace (else a plain field)"),
    "marker-cause": ("error", "a `cause` is {stack: valid stack index, time?: number, tid?: int}"),
    "marker-cause-alone": ("warning", "a `cause` comes with its `stack` backtrace (re-based)"),
    "marker-cause-mismatch": ("error", "`cause.stack` is the stack of the `stack` backtrace"),
    "markers-out-of-range": ("warning", "markers lie inside the profile's visible time range"),
    # marker schemas
    "schema-entry": ("error", "markerSchema entry: object with a non-empty string name"),
    "schema-duplicate": ("warning", "schema names unique per meta, data keys per schema"),
    "schema-display": ("error", "display is an array of allowed places"),
    "schema-data": ("error", "data: array of {key, label?, format, ...} or {label, value}"),
    "schema-format": ("error", "field format is one of the documented formats"),
    "schema-label": ("error", "tooltipLabel/tableLabel/chartLabel are strings"),
    "schema-label-placeholder": ("warning", "labels use {marker.name|duration|data.KEY}"),
    "schema-graphs": ("error", "graphs: array of {key among the data keys, type, color?}"),
    "schema-graph-type": ("warning", "graph type is bar, line or line-filled"),
    "schema-color-field": ("error", "colorField names a data key of its schema"),
    "marker-color": ("warning", "a colorField value is a GraphColor (else drawn default blue)"),
    "marker-graph-keys": ("warning", "a marker of a schema with graphs has every graph key, a "
                          "number (tracks.ts: a marker name gets its track only then)"),
    # libs and counters
    "libs-entry": ("error", "lib: integer start < end, offset; string name, path, debug*, ..."),
    "libs-precision": ("warning", "lib addresses fit in 2^53 (JSON.parse rounds above)"),
    "libs-order": ("error", "libs sorted by start and non-overlapping"),
    "counter-shape": ("error", "counter {name, category, description, samples {time, count}}"),
    "counter-empty": ("error", "a counter has at least one sample (else dropped)"),
    "counter-value": ("error", "counter time/count numbers, number null or a number"),
    "counter-time-order": ("error", "counter sample times ascending"),
    # what the front-end shows on load, for profiles msgpack2gecko wrote (its
    # profileGatheringLog.converter); src/profile-logic/tracks.ts
    "rtprof-rt-visible": ("error", "a real-time thread is named for the audio rule (Audio...)"),
    "rtprof-gauge-track": ("error", "a gauge is a marker graph track of its values, with a unit"),
    "rtprof-gauge-counter": ("error", "no Gecko counter but Memory ones (others show as rates)"),
    "rtprof-memory-zero": ("error", "a Memory counter's first row has count 0 (its baseline)"),
    "rtprof-sampler-hidden": ("error", "the sampler thread has no CPU and only Idle samples"),
    "rtprof-overhead-rate": ("error", "at most one overhead marker per 100 ms window"),
}


@dataclass(frozen=True)
class Issue:
    level: str  # "error" or "warning"
    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        text = f"{self.path}: {self.message} [{self.rule}]"
        return f"warning: {text}" if self.level == "warning" else text


def _is_int(x) -> bool:
    return type(x) is int  # excludes bool (a subclass of int) and float


def _is_num(x) -> bool:
    return (type(x) is int or type(x) is float) and math.isfinite(x)


def _is_str(x) -> bool:
    return type(x) is str


def _one_of(x, allowed) -> bool:
    """x is a string among `allowed` (safe for unhashable JSON values)."""
    return type(x) is str and x in allowed


def _got(obj: dict, key) -> str:
    """Describe obj[key] for a message, or say it is missing."""
    return _desc(obj[key]) if key in obj else "nothing (missing)"


def _desc(x) -> str:
    try:
        text = json.dumps(x, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


class _Table:
    """A checked {schema, data} table. getter(column)(row) reads one cell; a short row or a
    column missing from the schema reads as null, as in the front-end's _toStructOfArrays."""

    def __init__(self, cols: dict, rows: list):
        self.cols = cols
        self.rows = rows

    def has(self, name: str) -> bool:
        return name in self.cols

    def getter(self, name: str):
        i = self.cols.get(name)
        if i is None:
            return lambda row: None
        return lambda row: row[i] if i < len(row) else None


@dataclass
class _Proc:
    """What a thread needs to know about the process object it sits in."""
    path: str     # "" for the top level, "processes[i]." otherwise
    libs: list    # valid, sorted (start, end) pairs
    delta: float  # ms to add to this process's times to get top-level times


class _Checker:
    def __init__(self, strict_version=True, require_samples=False, expect_threads=None,
                 expect_processes=None, no_js_shapes=False, max_per_rule=20):
        self.strict_version = strict_version
        self.require_samples = require_samples
        self.expect_threads = expect_threads
        self.expect_processes = expect_processes
        self.no_js_shapes = no_js_shapes
        self.max_per_rule = max_per_rule
        self.issues: list[Issue] = []
        self.scope = ""
        self._counts: dict = {}
        self.categories = None      # top-level meta.categories if usable
        self.string_fields: dict = {}   # marker type -> {key: format} over all schemas
        self.color_fields: dict = {}    # marker type -> its schema's colorField
        self.graph_keys: dict = {}      # marker type -> its schema's graph keys
        self.all_schema_names: set = set()
        self.threads_info: list = []    # per thread: data for whole-profile checks

    # -- reporting --------------------------------------------------------------------
    def _add(self, level, path, rule, message):
        key = (rule, self.scope)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if self.max_per_rule and n > self.max_per_rule:
            return
        self.issues.append(Issue(level, path, rule, message))

    def err(self, path, rule, message):
        self._add("error", path, rule, message)

    def warn(self, path, rule, message):
        self._add("warning", path, rule, message)

    def finish(self):
        if self.max_per_rule:
            for (rule, scope), n in self._counts.items():
                if n > self.max_per_rule:
                    level = next(i.level for i in self.issues if i.rule == rule)
                    self.issues.append(Issue(level, scope.rstrip(".") or "(profile)", rule,
                                             f"... {n - self.max_per_rule} more suppressed"))
        return self.issues

    # -- generic pieces ---------------------------------------------------------------
    def table(self, obj, path, required=()):
        if not isinstance(obj, dict):
            self.err(path, "table-shape", f"expected a {{schema, data}} table, got {_desc(obj)}")
            return None
        schema, data = obj.get("schema"), obj.get("data")
        if not isinstance(schema, dict) or not isinstance(data, list):
            self.err(path, "table-shape", "expected {schema: object, data: array}")
            return None
        cols, seen = {}, {}
        for col, idx in schema.items():
            if not _is_int(idx) or idx < 0:
                self.err(f"{path}.schema.{col}", "table-schema-index",
                         f"column index must be an integer >= 0, got {_desc(idx)}")
                continue
            if idx in seen:
                self.err(f"{path}.schema.{col}", "table-schema-duplicate",
                         f"index {idx} is also used by column {seen[idx]!r}")
            seen[idx] = col
            cols[col] = idx
        missing = [c for c in required if c not in schema]
        if missing:
            self.err(f"{path}.schema", "table-missing-column",
                     "missing column(s) " + ", ".join(missing))
        width = max(cols.values()) + 1 if cols else 0
        for i, row in enumerate(data):
            if type(row) is not list:
                self.err(f"{path}.data[{i}]", "table-row-type",
                         f"row is not an array: {_desc(row)}")
            elif len(row) > width:
                self.err(f"{path}.data[{i}]", "table-row-length",
                         f"row has {len(row)} values, the schema only {width} column(s)")
        return _Table(cols, data)

    # -- meta pieces ------------------------------------------------------------------
    def check_version(self, meta, path, top_version=None):
        v = meta.get("version")
        if "version" not in meta:
            self.err(f"{path}version", "meta-version", "missing (rejected as a very old profile)")
            return None
        if not _is_num(v):
            self.err(f"{path}version", "meta-version", f"must be a number, got {_desc(v)}")
            return None
        if v > GECKO_VERSION:
            self.err(f"{path}version", "meta-version",
                     f"{v} is newer than {GECKO_VERSION}, the front-end rejects it")
        elif v != int(v) or v < 1:
            self.err(f"{path}version", "meta-version", f"{v} is not a valid format version")
        elif top_version is None and self.strict_version and v != GECKO_VERSION:
            self.err(f"{path}version", "meta-version-strict",
                     f"{v}: msgpack2gecko must write {GECKO_VERSION} (--any-version to allow)")
        if top_version is not None and v != top_version:
            self.warn(f"{path}version", "subprocess-version",
                      f"{v} differs from the top-level {top_version}; only the top-level "
                      "version drives the front-end's upgraders")
        return v

    def check_categories(self, cats, path):
        if cats is None:
            self.err(path, "meta-categories",
                     "missing: the front-end substitutes Firefox's own list and every category "
                     "index means something else")
            return None
        if not isinstance(cats, list):
            self.err(path, "meta-categories", f"must be an array, got {_desc(cats)}")
            return None
        if len(cats) > MAX_CATEGORIES:
            self.err(path, "meta-categories", f"{len(cats)} categories, at most {MAX_CATEGORIES}")
        good, grey = True, False
        for i, cat in enumerate(cats):
            cpath = f"{path}[{i}]"
            if not isinstance(cat, dict):
                self.err(cpath, "category-shape", f"must be an object, got {_desc(cat)}")
                good = False
                continue
            name, color, subs = cat.get("name"), cat.get("color"), cat.get("subcategories")
            if not _is_str(name) or not name:
                self.err(f"{cpath}.name", "category-shape",
                         f"must be a non-empty string, got {_desc(name)}")
            elif name != "Idle" and name.strip().lower() == "idle":
                self.err(f"{cpath}.name", "category-idle",
                         f"{name!r} must be spelled exactly 'Idle' to count as idle time")
            if not _one_of(color, CATEGORY_COLORS):
                self.err(f"{cpath}.color", "category-shape",
                         f"{_desc(color)} is not one of " + ", ".join(sorted(CATEGORY_COLORS)))
            elif color == "grey":
                grey = True
            if not isinstance(subs, list) or not subs:
                self.err(f"{cpath}.subcategories", "category-shape",
                         f"must be a non-empty array, got {_desc(subs)}")
                good = False
            else:
                for j, s in enumerate(subs):
                    if not _is_str(s):
                        self.err(f"{cpath}.subcategories[{j}]", "category-shape",
                                 f"must be a string, got {_desc(s)}")
        if not grey:
            self.err(path, "category-grey",
                     "no category has color 'grey' (the first grey one is the default category)")
        return cats if good else None

    def check_marker_schemas(self, schemas, path):
        """Check one meta.markerSchema list; returns the set of names it defines."""
        names = set()
        if not isinstance(schemas, list):
            self.err(path, "meta-markerschema",
                     f"must be an array (may be empty), got {_desc(schemas)}"
                     if schemas is not None else "missing: must be an array (may be empty)")
            return names
        for i, s in enumerate(schemas):
            spath = f"{path}[{i}]"
            if not isinstance(s, dict):
                self.err(spath, "schema-entry", f"must be an object, got {_desc(s)}")
                continue
            name = s.get("name")
            if not _is_str(name) or not name:
                self.err(f"{spath}.name", "schema-entry",
                         f"must be a non-empty string, got {_desc(name)}")
                name = None
            elif name in names:
                self.warn(f"{spath}.name", "schema-duplicate", f"schema {name!r} defined twice")
            if name:
                names.add(name)
            display = s.get("display")
            if not isinstance(display, list):
                self.err(f"{spath}.display", "schema-display",
                         f"must be an array, got {_desc(display)}")
            else:
                for j, d in enumerate(display):
                    if not _one_of(d, DISPLAY_LOCATIONS):
                        self.err(f"{spath}.display[{j}]", "schema-display",
                                 f"{_desc(d)} is not one of "
                                 + ", ".join(sorted(DISPLAY_LOCATIONS)))
            keys = {}
            data = s.get("data")
            if not isinstance(data, list):
                self.err(f"{spath}.data", "schema-data", f"must be an array, got {_desc(data)}")
                data = []
            for j, f in enumerate(data):
                fpath = f"{spath}.data[{j}]"
                if not isinstance(f, dict):
                    self.err(fpath, "schema-data", f"must be an object, got {_desc(f)}")
                    continue
                if "key" in f:
                    key, fmt = f.get("key"), f.get("format")
                    if not _is_str(key) or not key:
                        self.err(f"{fpath}.key", "schema-data",
                                 f"must be a non-empty string, got {_desc(key)}")
                        continue
                    if key in keys:
                        self.warn(f"{fpath}.key", "schema-duplicate",
                                  f"data key {key!r} listed twice")
                    if not _one_of(fmt, MARKER_FORMATS):
                        self.err(f"{fpath}.format", "schema-format",
                                 f"{_desc(fmt)} is not a documented marker format")
                    keys[key] = fmt if _is_str(fmt) else None
                    if "label" in f and not _is_str(f["label"]):
                        self.err(f"{fpath}.label", "schema-data",
                                 f"must be a string, got {_desc(f['label'])}")
                    for flag in ("searchable", "hidden"):
                        if flag in f and type(f[flag]) is not bool:
                            self.err(f"{fpath}.{flag}", "schema-data",
                                     f"must be a boolean, got {_desc(f[flag])}")
                elif "label" in f and "value" in f:
                    if not _is_str(f["label"]):
                        self.err(f"{fpath}.label", "schema-data",
                                 f"must be a string, got {_desc(f['label'])}")
                else:
                    self.err(fpath, "schema-data",
                             "neither a dynamic field {key, format} "
                             "nor a static one {label, value}")
            for lk in LABEL_KEYS:
                if lk not in s:
                    continue
                label = s[lk]
                if not _is_str(label):
                    self.err(f"{spath}.{lk}", "schema-label",
                             f"must be a string, got {_desc(label)}")
                    continue
                for ph in _PLACEHOLDER_RE.findall(label):
                    ph = ph.strip()
                    if ph in ("marker.name", "marker.duration"):
                        continue
                    if ph.startswith("marker.data."):
                        if ph[len("marker.data."):] not in keys:
                            self.warn(f"{spath}.{lk}", "schema-label-placeholder",
                                      f"{{{ph}}} names no data key of this schema (shows empty)")
                    else:
                        self.warn(f"{spath}.{lk}", "schema-label-placeholder",
                                  f"{{{ph}}} is not {{marker.name}}, {{marker.duration}} "
                                  "or {marker.data.KEY}")
            if "graphs" in s:
                graphs = s["graphs"]
                if not isinstance(graphs, list):
                    self.err(f"{spath}.graphs", "schema-graphs",
                             f"must be an array, got {_desc(graphs)}")
                    graphs = []
                for j, g in enumerate(graphs):
                    gpath = f"{spath}.graphs[{j}]"
                    if not isinstance(g, dict):
                        self.err(gpath, "schema-graphs", f"must be an object, got {_desc(g)}")
                        continue
                    if not _one_of(g.get("key"), keys):
                        self.err(f"{gpath}.key", "schema-graphs",
                                 f"{_got(g, 'key')} is not a data key of schema {name!r}")
                    gtype = g.get("type")
                    if not _is_str(gtype):
                        self.err(f"{gpath}.type", "schema-graphs",
                                 f"must be a string, got {_desc(gtype)}")
                    elif gtype not in GRAPH_TYPES:
                        self.warn(f"{gpath}.type", "schema-graph-type",
                                  f"{gtype!r} is not one of " + ", ".join(sorted(GRAPH_TYPES)))
                    if "color" in g and not _is_str(g["color"]):
                        self.err(f"{gpath}.color", "schema-graphs",
                                 f"must be a string, got {_desc(g['color'])}")
            if "colorField" in s:
                if not _one_of(s["colorField"], keys):
                    self.err(f"{spath}.colorField", "schema-color-field",
                             f"{_got(s, 'colorField')} is not a data key of schema {name!r}")
                elif name:
                    self.color_fields.setdefault(name, s["colorField"])
            if name and isinstance(s.get("graphs"), list):
                self.graph_keys.setdefault(name, [g.get("key") for g in s["graphs"]
                                                  if isinstance(g, dict)])
            if name:
                fields = self.string_fields.setdefault(name, {})
                for k, fmt in keys.items():
                    fields.setdefault(k, fmt)
        return names

    def check_libs(self, libs, path):
        """Returns the usable (start, end) ranges, sorted."""
        if not isinstance(libs, list):
            self.err(path, "top-type", f"libs must be an array (may be empty), got {_desc(libs)}")
            return []
        ranges, prev = [], None  # prev: (index, (start, end)) of the last good lib
        for i, lib in enumerate(libs):
            lpath = f"{path}[{i}]"
            if not isinstance(lib, dict):
                self.err(lpath, "libs-entry", f"must be an object, got {_desc(lib)}")
                continue
            ok = True
            for k in LIB_INT_FIELDS:
                v = lib.get(k)
                if not _is_int(v):
                    self.err(f"{lpath}.{k}", "libs-entry",
                             f"must be an integer (the import crashes otherwise), "
                             f"got {_got(lib, k)}")
                    ok = False
                elif v < 0:
                    self.err(f"{lpath}.{k}", "libs-entry", f"must be >= 0, got {v}")
                    ok = False
                elif v > 2 ** 53:
                    self.warn(f"{lpath}.{k}", "libs-precision",
                              f"{v:#x} is above 2^53: JSON.parse rounds it")
            for k in LIB_STR_FIELDS:
                if not _is_str(lib.get(k)):
                    self.err(f"{lpath}.{k}", "libs-entry",
                             f"must be a string, got {_got(lib, k)}")
            if not ok:
                continue
            start, end = lib["start"], lib["end"]
            if start >= end:
                self.err(lpath, "libs-entry", f"start {start:#x} >= end {end:#x}")
                continue
            if prev is not None:
                pi, (pstart, pend) = prev
                if start < pstart:
                    self.err(f"{lpath}.start", "libs-order",
                             f"{start:#x} < start {pstart:#x} of libs[{pi}]: "
                             "libs must be sorted by start")
                elif start < pend:
                    self.err(f"{lpath}.start", "libs-order",
                             f"{start:#x} overlaps libs[{pi}] ({pstart:#x}..{pend:#x})")
            prev = (i, (start, end))
            ranges.append((start, end))
        ranges.sort()
        return ranges

    def check_counters(self, proc, path, has_main):
        if "counters" not in proc:
            return
        counters = proc["counters"]
        if not isinstance(counters, list):
            self.err(f"{path}counters", "top-type", f"must be an array, got {_desc(counters)}")
            return
        if counters and not has_main:
            self.err(f"{path}counters", "counters-no-geckomain",
                     "this process object has no thread named 'GeckoMain': the front-end drops "
                     "its counters without a word")
        for i, c in enumerate(counters):
            cpath = f"{path}counters[{i}]"
            if not isinstance(c, dict):
                self.err(cpath, "counter-shape", f"must be an object, got {_desc(c)}")
                continue
            for k in ("name", "category", "description"):
                if not _is_str(c.get(k)):
                    self.err(f"{cpath}.{k}", "counter-shape",
                             f"must be a string, got {_got(c, k)}")
            t = self.table(c.get("samples"), f"{cpath}.samples", ("time", "count"))
            if t is None:
                continue
            if not t.rows:
                self.err(f"{cpath}.samples.data", "counter-empty",
                         "no samples: the front-end drops this counter")
            get_t, get_c, get_n = t.getter("time"), t.getter("count"), t.getter("number")
            prev = None
            for j, row in enumerate(t.rows):
                if type(row) is not list:
                    continue
                rpath = f"{cpath}.samples.data[{j}]"
                tv, cv, nv = get_t(row), get_c(row), get_n(row)
                if not _is_num(tv):
                    self.err(rpath, "counter-value", f"time must be a number, got {_desc(tv)}")
                else:
                    if prev is not None and tv < prev:
                        self.err(rpath, "counter-time-order", f"time {tv} < previous {prev}")
                    prev = tv
                if t.has("count") and not _is_num(cv):
                    self.err(rpath, "counter-value", f"count must be a number, got {_desc(cv)}")
                if nv is not None and not _is_num(nv):
                    self.err(rpath, "counter-value",
                             f"number must be a number or null, got {_desc(nv)}")

    # -- threads ------------------------------------------------------------------------
    def check_thread(self, th, path, proc: _Proc):
        self.scope = path + "."
        if not isinstance(th, dict):
            self.err(path, "thread-type", f"must be an object, got {_desc(th)}")
            return
        for k in ("name", "processType", "processName"):
            if not _is_str(th.get(k)):
                self.err(f"{path}.{k}", "thread-field", f"must be a string, got {_got(th, k)}")
        for k in ("tid", "pid"):
            if not _is_int(th.get(k)):
                self.err(f"{path}.{k}", "thread-field",
                         f"must be an integer, got {_got(th, k)}")
        reg, unreg = th.get("registerTime"), th.get("unregisterTime")
        if not _is_num(reg):
            self.err(f"{path}.registerTime", "thread-register",
                     f"must be a number, got {_got(th, 'registerTime')}")
        if (unreg is not None or "unregisterTime" not in th) and not _is_num(unreg):
            self.err(f"{path}.unregisterTime", "thread-register",
                     f"must be a number or null, got {_got(th, 'unregisterTime')}")
        elif _is_num(unreg) and _is_num(reg) and unreg < reg:
            self.err(f"{path}.unregisterTime", "thread-register", f"{unreg} < registerTime {reg}")

        strings = th.get("stringTable")
        if not isinstance(strings, list):
            self.err(f"{path}.stringTable", "string-table",
                     f"must be an array of strings, got {_desc(strings)}")
            strings = None
        else:
            for i, s in enumerate(strings):
                if not _is_str(s):
                    self.err(f"{path}.stringTable[{i}]", "string-table",
                             f"must be a string, got {_desc(s)}")
        nstr = len(strings) if strings is not None else None

        nframes = self._check_frames(th.get("frameTable"), f"{path}.frameTable", strings, proc)
        nstacks = self._check_stacks(th.get("stackTable"), f"{path}.stackTable", nframes)
        info = self._check_samples(th.get("samples"), f"{path}.samples", nstacks)
        info.update(path=path, name=th.get("name"), pid=th.get("pid"), delta=proc.delta,
                    markers=[])
        self._check_markers(th.get("markers"), f"{path}.markers", nstr, nstacks, strings, info)
        self.threads_info.append(info)

    def _check_index(self, v, n, path, rule, what, nullable=True):
        """v must be null (if nullable) or an int in [0, n) (n None: range unknown)."""
        if v is None:
            if not nullable:
                self.err(path, rule, f"{what} must be an index, got null")
            return False
        if not _is_int(v):
            self.err(path, rule, f"{what} must be an integer index, got {_desc(v)}")
            return False
        if v < 0 or (n is not None and v >= n):
            self.err(path, rule, f"{what} {v} out of range 0..{'?' if n is None else n - 1}")
            return False
        return True

    def _check_frames(self, obj, path, strings, proc: _Proc):
        t = self.table(obj, path, ("location",))
        if t is None:
            return None
        missing = [c for c in FRAME_COLUMNS if not t.has(c)]
        if missing and "location" not in missing:
            self.warn(f"{path}.schema", "table-missing-column-doc",
                      "documented column(s) missing, read as null: " + ", ".join(missing))
        nstr = len(strings) if strings is not None else None
        cats = self.categories
        g = {c: t.getter(c) for c in FRAME_COLUMNS}
        shapes = {}  # location string index -> already analysed
        for i, row in enumerate(t.rows):
            if type(row) is not list:
                continue
            rpath = f"{path}.data[{i}]"
            loc = g["location"](row)
            if self._check_index(loc, nstr, rpath, "frame-location", "location", nullable=False):
                if strings is not None and loc not in shapes and _is_str(strings[loc]):
                    shapes[loc] = True
                    self._check_location(strings[loc], rpath, proc)
            impl = g["implementation"](row)
            if impl is not None:
                self._check_index(impl, nstr, rpath, "frame-implementation", "implementation")
            for col in ("line", "column"):
                v = g[col](row)
                if v is not None and not _is_int(v):
                    self.err(rpath, "frame-line",
                             f"{col} must be an integer or null, got {_desc(v)}")
            rel, win = g["relevantForJS"](row), g["innerWindowID"](row)
            if rel is not None and type(rel) is not bool:
                self.warn(rpath, "frame-field-type",
                          f"relevantForJS should be a boolean, got {_desc(rel)}")
            if win is not None and not _is_num(win):
                self.warn(rpath, "frame-field-type",
                          f"innerWindowID should be a number or null, got {_desc(win)}")
            cat, sub = g["category"](row), g["subcategory"](row)
            cat_ok = False
            if cat is not None:
                cat_ok = self._check_index(cat, len(cats) if cats is not None else None, rpath,
                                           "frame-category", "category")
            if sub is not None:
                if not _is_int(sub) or sub < 0:
                    self.err(rpath, "frame-subcategory",
                             f"subcategory must be an integer index, got {_desc(sub)}")
                elif cat_ok and cats is not None:
                    subs = cats[cat]["subcategories"]
                    if sub >= len(subs):
                        self.err(rpath, "frame-subcategory",
                                 f"subcategory {sub} out of range: category {cat} "
                                 f"({cats[cat].get('name')!r}) has {len(subs)}")
            if (cat is None) != (sub is None):
                self.warn(rpath, "frame-subcategory-null",
                          f"category {_desc(cat)} with subcategory {_desc(sub)}: "
                          "both should be set or both null")
        return len(t.rows)

    def _check_location(self, s, rpath, proc: _Proc):
        if s.startswith("0x"):
            if not _HEX_RE.fullmatch(s):
                self.warn(rpath, "frame-address-hex",
                          f"location {s!r} starts with 0x but is not a hex address")
            elif proc.libs:
                addr = int(s, 16)
                if not any(a <= addr < b for a, b in proc.libs):
                    self.warn(rpath, "frame-address-lib",
                              f"address {s} is in no {proc.path}libs entry: "
                              "it cannot be symbolicated")
            return
        if any(r.fullmatch(s) for r in _CPP_RES):
            return
        if any(r.fullmatch(s) for r in _JS_RES):
            msg = (f"location {s!r} is shaped like JavaScript ('name (file:line)' or "
                   "'url:line'); for C code put the line in frameTable.line")
            if self.no_js_shapes:
                self.err(rpath, "frame-js-shape", msg)
            else:
                self.warn(rpath, "frame-js-shape", msg)

    def _check_stacks(self, obj, path, nframes):
        t = self.table(obj, path, ("prefix", "frame"))
        if t is None:
            return None
        get_p, get_f = t.getter("prefix"), t.getter("frame")
        for i, row in enumerate(t.rows):
            if type(row) is not list:
                continue
            rpath = f"{path}.data[{i}]"
            p = get_p(row)
            if p is not None:
                if not _is_int(p):
                    self.err(rpath, "stack-prefix",
                             f"prefix must be an integer or null, got {_desc(p)}")
                elif p < 0:
                    self.err(rpath, "stack-prefix", f"prefix {p} < 0")
                elif p >= i:
                    self.err(rpath, "stack-prefix",
                             f"prefix {p} >= own index {i} (a parent stack must come first)")
            self._check_index(get_f(row), nframes, rpath, "stack-frame", "frame", nullable=False)
        return len(t.rows)

    def _check_samples(self, obj, path, nstacks):
        info = {"nsamples": 0, "first": None, "last": None, "cpu": False, "times": []}
        t = self.table(obj, path, ("stack", "time", "eventDelay"))
        if t is None:
            return info
        has_cpu = t.has("threadCPUDelta")
        info["cpu"] = has_cpu
        get_s, get_t = t.getter("stack"), t.getter("time")
        get_e, get_c = t.getter("eventDelay"), t.getter("threadCPUDelta")
        prev, all_null_stack, all_null_cpu = None, True, True
        times = info["times"]
        for i, row in enumerate(t.rows):
            if type(row) is not list:
                continue
            rpath = f"{path}.data[{i}]"
            s = get_s(row)
            if s is not None:
                all_null_stack = False
                self._check_index(s, nstacks, rpath, "sample-stack", "stack")
            tv = get_t(row)
            if not _is_num(tv):
                self.err(rpath, "sample-time", f"time must be a number, got {_desc(tv)}")
            else:
                if prev is not None and tv < prev:
                    self.err(rpath, "sample-time-order", f"time {tv} < previous sample's {prev}")
                prev = tv
                times.append(tv)
            e = get_e(row)
            if e is not None and not _is_num(e):
                self.err(rpath, "sample-event-delay",
                         f"eventDelay must be a number or null, got {_desc(e)}")
            if has_cpu:
                c = get_c(row)
                if c is not None:
                    all_null_cpu = False
                    if not _is_num(c) or c < 0:
                        self.err(rpath, "sample-cpu-delta",
                                 f"threadCPUDelta must be null or a number >= 0, got {_desc(c)}")
        info["nsamples"] = len(t.rows)
        if times:
            info["first"], info["last"] = min(times), max(times)
        if t.rows:
            if all_null_stack:
                self.warn(f"{path}.data", "samples-all-null-stack",
                          "every sample has a null stack: the call tree is empty")
            if has_cpu and all_null_cpu:
                self.warn(f"{path}.data", "sample-cpu-delta-all-null",
                          "every threadCPUDelta is null: the front-end drops the column "
                          "(no CPU graph)")
        return info

    def _check_markers(self, obj, path, nstr, nstacks, strings, info):
        t = self.table(obj, path, MARKER_COLUMNS)
        if t is None:
            return
        cats = self.categories
        ncats = len(cats) if cats is not None else None
        g = {c: t.getter(c) for c in MARKER_COLUMNS}
        open_starts: dict = {}  # name index -> count of unmatched phase-2 markers
        no_schema: dict = {}    # data.type without a schema -> [first marker path, count]
        events = []
        for i, row in enumerate(t.rows):
            if type(row) is not list:
                continue
            rpath = f"{path}.data[{i}]"
            name = g["name"](row)
            self._check_index(name, nstr, rpath, "marker-name", "name", nullable=False)
            st, et, ph = g["startTime"](row), g["endTime"](row), g["phase"](row)
            times_ok = True
            for col, v in (("startTime", st), ("endTime", et)):
                if v is not None and not _is_num(v):
                    self.err(rpath, "marker-time-type",
                             f"{col} must be a number or null, got {_desc(v)}")
                    times_ok = False
            if st is None and et is None:
                self.err(rpath, "marker-null-times",
                         "startTime and endTime both null: the import crashes")
            elif st is None and et == 0:
                self.err(rpath, "marker-null-times",
                         "endTime 0 with a null startTime: the front-end's `endTime || startTime` "
                         "is null and the import crashes")
            if not _is_int(ph) or not 0 <= ph <= 3:
                self.err(rpath, "marker-phase", f"phase must be 0, 1, 2 or 3, got {_desc(ph)}")
            elif times_ok:
                self._check_phase_times(ph, st, et, rpath)
                when = st if ph == 2 else et
                if ph in (2, 3) and _is_int(name) and when is not None:
                    events.append((when, ph, name, i))
                if ph == 0 and st is not None:
                    info["markers"].append((st, st, i))
                elif ph == 1 and st is not None and et is not None:
                    info["markers"].append((st, et, i))
                elif ph == 2 and st is not None:
                    info["markers"].append((st, math.inf, i))
                elif ph == 3 and et is not None:
                    info["markers"].append((-math.inf, et, i))
            self._check_index(g["category"](row), ncats, rpath, "marker-category", "category",
                              nullable=False)
            data = g["data"](row)
            if data is not None:
                if not isinstance(data, dict):
                    self.err(rpath, "marker-data",
                             f"data must be null or an object, got {_desc(data)}")
                else:
                    self._check_marker_data(data, rpath, nstr, nstacks, no_schema)
        for mtype, (first, n) in no_schema.items():
            self.warn(f"{first}.data.type", "marker-type-no-schema",
                      f"{mtype!r} names no meta.markerSchema entry ({n} marker(s), the first "
                      "here): no fields, labels or custom display for them")
        # phase 2/3 pairing by name, in time order
        events.sort(key=lambda e: (e[0], e[1] == 3))
        for _, ph, name, i in events:
            if ph == 2:
                open_starts[name] = open_starts.get(name, 0) + 1
            elif open_starts.get(name):
                open_starts[name] -= 1
            else:
                self.warn(f"{path}.data[{i}]", "marker-unpaired",
                          f"interval end for {self._sname(strings, name)} has no earlier start "
                          "(shown as starting at the profile start)")
        for name, n in open_starts.items():
            if n:
                self.warn(f"{path}.data", "marker-unpaired",
                          f"{n} interval start(s) for {self._sname(strings, name)} never end "
                          "(shown as running to the profile end)")

    @staticmethod
    def _sname(strings, idx):
        if strings is not None and 0 <= idx < len(strings):
            return repr(strings[idx])
        return f"name {idx}"

    def _check_phase_times(self, ph, st, et, rpath):
        need = {0: ("startTime",), 1: ("startTime", "endTime"),
                2: ("startTime",), 3: ("endTime",)}[ph]
        vals = {"startTime": st, "endTime": et}
        kind = {0: "instant", 1: "interval", 2: "interval start", 3: "interval end"}[ph]
        for col in need:
            if vals[col] is None:
                self.err(rpath, "marker-phase-times", f"phase {ph} ({kind}) needs a {col}")
        for col in ("startTime", "endTime"):
            if col not in need and vals[col] is not None:
                self.warn(rpath, "marker-ignored-time",
                          f"phase {ph} ({kind}) ignores {col} {vals[col]}; write null")
        if ph == 1 and st is not None and et is not None and et < st:
            self.err(rpath, "marker-phase-times", f"endTime {et} < startTime {st}")

    def _check_marker_data(self, data, rpath, nstr, nstacks, no_schema):
        mtype = data.get("type")
        if "type" in data and not _is_str(mtype):
            self.err(f"{rpath}.data.type", "marker-data", f"must be a string, got {_desc(mtype)}")
            mtype = None
        if _is_str(mtype):
            if mtype not in self.all_schema_names:
                no_schema.setdefault(mtype, [rpath, 0])[1] += 1
            fields = dict(self.string_fields.get(mtype, {}))
            if mtype == "CompositorScreenshot":  # hard-coded in the front-end
                fields.setdefault("url", "unique-string")
            for key, fmt in fields.items():
                v = data.get(key)
                if v is None:
                    continue
                if fmt in STRING_INDEX_FORMATS:
                    self._check_index(v, nstr, f"{rpath}.data.{key}", "marker-string-index",
                                      f"{fmt} field {key!r} (a stringTable index, not a string)")
                elif fmt in NUMERIC_FORMATS and not _is_num(v):
                    self.warn(f"{rpath}.data.{key}", "marker-field-format",
                              f"format {fmt!r} expects a number, got {_desc(v)}")
            self._check_marker_look(data, mtype, rpath)
        bt = None
        if "stack" in data:
            bt = self._check_marker_stack(data["stack"], f"{rpath}.data.stack", nstacks)
        if "cause" in data:
            self._check_marker_cause(data["cause"], f"{rpath}.data.cause", nstacks,
                                     "stack" in data, bt)

    def _check_marker_look(self, data, mtype, rpath):
        """colorField values and graph keys: what the marker chart and the marker tracks
        read of a marker, silently ignored when wrong."""
        cf = self.color_fields.get(mtype)
        if cf is not None and cf in data and data[cf] not in GRAPH_COLORS:
            self.warn(f"{rpath}.data.{cf}", "marker-color",
                      f"{_desc(data[cf])} is not a GraphColor: drawn in the default blue")
        for k in self.graph_keys.get(mtype, []):
            if not _is_num(data.get(k)):
                self.warn(f"{rpath}.data.{k}", "marker-graph-keys",
                          f"graph key {k!r} of schema {mtype!r} is {_desc(data.get(k))}, not a "
                          "number: no track for this marker name, or a gap in it")
                return

    def _check_marker_cause(self, cause, cpath, nstacks, has_stack, bt):
        """`cause` as tools reading the file see it (the front-end only keeps it when no
        backtrace `stack` replaces it): {stack, time?, tid?}."""
        if not isinstance(cause, dict):
            self.err(cpath, "marker-cause", f"must be an object, got {_desc(cause)}")
            return
        if "stack" not in cause:
            self.err(cpath, "marker-cause", "has no `stack` (a stackTable index)")
        else:
            self._check_index(cause["stack"], nstacks, f"{cpath}.stack", "marker-cause",
                              "stack", nullable=False)
        if "time" in cause and cause["time"] is not None and not _is_num(cause["time"]):
            self.err(f"{cpath}.time", "marker-cause", f"must be a number, got {_desc(cause['time'])}")
        if "tid" in cause and cause["tid"] is not None and not _is_int(cause["tid"]):
            self.err(f"{cpath}.tid", "marker-cause", f"must be an integer, got {_desc(cause['tid'])}")
        if not has_stack:
            self.warn(cpath, "marker-cause-alone",
                      "no `stack` backtrace next to it: the front-end keeps this index as is "
                      "while it merges every thread's stack table into one, so it points at "
                      "another thread's stack (except in the first thread); write the "
                      "backtrace as `stack` {samples: {schema, data: [[stack, time]]}}")
        elif bt is not None and cause.get("stack") != bt:
            self.err(f"{cpath}.stack", "marker-cause-mismatch",
                     f"{_desc(cause.get('stack'))}, but the `stack` backtrace names stack "
                     f"{bt} (the front-end shows that one)")

    def _check_marker_stack(self, stack, spath, nstacks):
        samples = stack.get("samples") if isinstance(stack, dict) else None
        if samples is None:
            self.warn(spath, "marker-stack-shape",
                      "not a backtrace {samples: {schema, data: [[stack, time]]}}: "
                      "kept as a plain field")
            return
        if not isinstance(samples, dict) or not isinstance(samples.get("data"), list):
            self.err(f"{spath}.samples", "marker-stack",
                     "must be {schema, data: [...]}: `samples.data.length` throws otherwise")
            return
        t = self.table(samples, f"{spath}.samples", ("stack", "time"))
        if t is None or not t.rows:
            if t is not None:
                self.warn(f"{spath}.samples.data", "marker-stack-shape",
                          "empty: no backtrace is shown")
            return
        row = t.rows[0]
        if type(row) is not list:
            return None
        s = t.getter("stack")(row)
        self._check_index(s, nstacks, f"{spath}.samples.data[0]", "marker-stack", "stack")
        tv = t.getter("time")(row)
        if not _is_num(tv):
            self.err(f"{spath}.samples.data[0]", "marker-stack",
                     f"time must be a number, got {_desc(tv)}")
        return s

    # -- whole profile --------------------------------------------------------------------
    def check(self, profile):
        if not isinstance(profile, dict):
            self.err("(profile)", "profile-type", f"must be a JSON object, got {_desc(profile)}")
            return self.finish()
        if profile.get("profile"):
            self.err("profile", "profile-wrapper",
                     "a truthy top-level `profile` key makes the front-end load that "
                     "object instead")
        for k in ("meta", "threads", "processes", "libs"):
            if k not in profile:
                self.err(k, "top-missing",
                         "missing" + (" (the import crashes)"
                                      if k in ("processes", "libs") else ""))
        meta = profile.get("meta")
        top_version = None
        meta_ok = isinstance(meta, dict)
        if not meta_ok:
            if "meta" in profile:
                self.err("meta", "meta-type", f"must be an object, got {_desc(meta)}")
            meta = {}  # already reported: skip the per-field meta checks
        else:
            top_version = self.check_version(meta, "meta.")
            if "preprocessedProfileVersion" in meta:
                self.err("meta.preprocessedProfileVersion", "meta-preprocessed",
                         "present: the file would be read as a processed profile, not a Gecko one")
            iv = meta.get("interval")
            if not _is_num(iv) or iv <= 0:
                self.err("meta.interval", "meta-interval",
                         f"must be a number > 0 (ms), got {_got(meta, 'interval')}")
            self._check_start_time(meta, "meta.")
            self.categories = self.check_categories(meta.get("categories"), "meta.categories")
            self._check_meta_misc(meta)
        self._check_top_optional(profile, "")

        # all marker schemas first: the front-end merges them before reading any marker
        top_names = (self.check_marker_schemas(meta.get("markerSchema"), "meta.markerSchema")
                     if meta_ok else set())
        procs = profile.get("processes")
        if "processes" in profile and not isinstance(procs, list):
            self.err("processes", "top-type",
                     f"must be an array (may be empty), got {_desc(procs)}")
        procs = procs if isinstance(procs, list) else []
        sub_names = []
        for i, sp in enumerate(procs):
            smeta = sp.get("meta") if isinstance(sp, dict) else None
            if isinstance(smeta, dict):
                sub_names.append(self.check_marker_schemas(
                    smeta.get("markerSchema"), f"processes[{i}].meta.markerSchema"))
            else:
                sub_names.append(set())
        self.all_schema_names = top_names.union(*sub_names)

        start = meta.get("startTime") if _is_num(meta.get("startTime")) else 0
        top_libs = self.check_libs(profile.get("libs", []), "libs")
        self._check_process_threads(profile, "", _Proc("", top_libs, 0.0))
        for i, sp in enumerate(procs):
            self._check_subprocess(sp, i, start, top_version, meta)
        self.scope = ""
        self._check_whole(meta)
        self.scope = ""
        _RtprofRules(self).check(profile)
        return self.finish()

    def _check_start_time(self, meta, path):
        st = meta.get("startTime")
        if not _is_num(st):
            self.err(f"{path}startTime", "meta-starttime",
                     f"must be a number (ms since the Unix epoch), got {_got(meta, 'startTime')}"
                     + (": every time of this process becomes NaN" if path != "meta." else ""))
        elif not 1e11 <= st < 1e14:
            self.warn(f"{path}startTime", "meta-starttime-unit",
                      f"{st} does not look like milliseconds since the Unix epoch")

    def _check_meta_misc(self, meta):
        units = meta.get("sampleUnits")
        if "sampleUnits" in meta:
            if not isinstance(units, dict):
                self.err("meta.sampleUnits", "sample-units",
                         f"must be an object, got {_desc(units)}")
            else:
                for k in ("time", "eventDelay"):
                    if units.get(k) != "ms":
                        self.err(f"meta.sampleUnits.{k}", "sample-units",
                                 f"must be 'ms', got {_got(units, k)}")
                cpu = units.get("threadCPUDelta")
                if not _one_of(cpu, CPU_DELTA_UNITS):
                    hint = " (use the micro sign U+00B5, not U+03BC)" if cpu == "\u03bcs" else ""
                    self.err("meta.sampleUnits.threadCPUDelta", "sample-units",
                             f"{_desc(cpu)} is not 'ns', '\u00b5s' or 'variable CPU cycles'{hint}")
        has_s, has_e = "profilingStartTime" in meta, "profilingEndTime" in meta
        ps, pe = meta.get("profilingStartTime"), meta.get("profilingEndTime")
        if has_s != has_e:
            self.err("meta.profilingStartTime" if has_s else "meta.profilingEndTime",
                     "profiling-range",
                     "profilingStartTime and profilingEndTime must be given together")
        elif has_s:
            if not _is_num(ps) or not _is_num(pe):
                self.err("meta.profilingStartTime", "profiling-range",
                         f"both must be numbers, got {_desc(ps)} and {_desc(pe)}")
            elif pe < ps:
                self.err("meta.profilingEndTime", "profiling-range",
                         f"{pe} < profilingStartTime {ps}")
        types = {"presymbolicated": (bool,), "product": (str,), "platform": (str,), "oscpu": (str,),
                 "abi": (str,), "CPUName": (str,), "logicalCPUs": (int,), "physicalCPUs": (int,),
                 "appBuildID": (str,), "device": (str,)}
        for k, ok in types.items():
            if k in meta and type(meta[k]) not in ok:
                self.warn(f"meta.{k}", "meta-field-type",
                          f"should be a {ok[0].__name__}, got {_desc(meta[k])}")
        shutdown = meta.get("shutdownTime")
        if shutdown is not None and not _is_num(shutdown):
            self.warn("meta.shutdownTime", "meta-field-type",
                      f"should be a number or null, got {_desc(meta['shutdownTime'])}")

    def _check_top_optional(self, proc, path):
        for k in ("pages", "pausedRanges"):
            if k in proc and not isinstance(proc[k], list):
                self.err(f"{path}{k}", "top-type", f"must be an array, got {_desc(proc[k])}")
        for k in ("profileGatheringLog", "profilingLog", "profilerOverhead"):
            if k in proc and not isinstance(proc[k], dict):
                self.err(f"{path}{k}", "top-type", f"must be an object, got {_desc(proc[k])}")
        ranges = proc.get("pausedRanges")
        for i, r in enumerate(ranges if isinstance(ranges, list) else []):
            rpath = f"{path}pausedRanges[{i}]"
            if not isinstance(r, dict):
                self.err(rpath, "paused-range", f"must be an object, got {_desc(r)}")
                continue
            for k in ("startTime", "endTime"):
                if r.get(k) is not None and not _is_num(r.get(k)):
                    self.err(f"{rpath}.{k}", "paused-range",
                             f"must be a number or null, got {_got(r, k)}")
            if not _is_str(r.get("reason")):
                self.err(f"{rpath}.reason", "paused-range",
                         f"must be a string, got {_got(r, 'reason')}")

    def _check_process_threads(self, proc, path, ctx: _Proc):
        threads = proc.get("threads")
        if not isinstance(threads, list):
            if "threads" in proc:
                self.err(f"{path}threads", "top-type", f"must be an array, got {_desc(threads)}")
            threads = []
        for i, th in enumerate(threads):
            self.check_thread(th, f"{path}threads[{i}]", ctx)
        self.scope = path
        has_main = any(isinstance(th, dict) and th.get("name") == "GeckoMain" for th in threads)
        self.check_counters(proc, path, has_main)
        if "profilerOverhead" in proc and not has_main:
            self.warn(f"{path}profilerOverhead", "overhead-no-geckomain",
                      "no GeckoMain thread in this process object: the front-end drops it")

    def _check_subprocess(self, sp, i, top_start, top_version, top_meta):
        path = f"processes[{i}]"
        self.scope = path + "."
        if not isinstance(sp, dict):
            self.err(path, "subprocess-shape", f"must be an object, got {_desc(sp)}")
            return
        for k in ("meta", "threads", "libs"):
            if k not in sp:
                self.err(f"{path}.{k}", "subprocess-shape", "missing")
        meta = sp.get("meta")
        if not isinstance(meta, dict):
            if "meta" in sp:
                self.err(f"{path}.meta", "subprocess-shape",
                         f"must be an object, got {_desc(meta)}")
            meta = {}
        self.check_version(meta, f"{path}.meta.",
                           GECKO_VERSION if top_version is None else top_version)
        self._check_start_time(meta, f"{path}.meta.")
        if "categories" not in meta:
            self.err(f"{path}.meta.categories", "subprocess-shape", "missing")
        else:
            sub_cats = self.check_categories(meta["categories"], f"{path}.meta.categories")
            if sub_cats is not None and top_meta.get("categories") != meta["categories"]:
                self.warn(f"{path}.meta.categories", "subprocess-categories",
                          "differ from the top-level categories; the front-end only reads the "
                          "top-level list, so this process's category indexes point into that one")
        for k in ("sampleUnits", "preprocessedProfileVersion"):
            if k in meta and meta.get(k) != top_meta.get(k):
                self.warn(f"{path}.meta.{k}", "subprocess-ignored-meta",
                          "ignored by the front-end (only the top-level meta's is read)")
        nested = sp.get("processes")
        if nested is not None and nested != []:
            self.err(f"{path}.processes", "subprocess-nested",
                     "only one level of processes is read: these are ignored")
        self._check_top_optional(sp, f"{path}.")
        st = meta.get("startTime")
        delta = st - top_start if _is_num(st) else 0.0
        libs = self.check_libs(sp.get("libs", []), f"{path}.libs")
        self._check_process_threads(sp, f"{path}.", _Proc(f"{path}.", libs, delta))

    def _check_whole(self, meta):
        infos = self.threads_info
        if not infos:
            self.err("threads", "no-threads", "the profile has no thread at all")
        # GeckoMain per pid
        mains: dict = {}
        for info in infos:
            if info["name"] == "GeckoMain" and info["pid"] is not None:
                pid = str(info["pid"])
                if pid in mains:
                    self.err(f"{info['path']}.name", "geckomain-duplicate",
                             f"second GeckoMain thread for pid {pid} (first: {mains[pid]}): "
                             "one of them disappears")
                else:
                    mains[pid] = info["path"]
        # CPU deltas need sampleUnits
        if "sampleUnits" not in meta:
            for info in infos:
                if info["cpu"]:
                    self.err("meta.sampleUnits", "sample-units-missing",
                             f"{info['path']}.samples has threadCPUDelta but meta.sampleUnits is "
                             "missing: no CPU usage is shown")
                    break
        # samples
        for info in infos:
            if info["nsamples"] == 0:
                msg = "no samples: threads without samples are poorly served by the front-end"
                if self.require_samples:
                    self.err(f"{info['path']}.samples", "samples-missing", msg)
                else:
                    self.warn(f"{info['path']}.samples", "samples-missing", msg)
        if len(infos) > MAX_DEFAULT_VISIBLE_THREADS:
            self.warn("threads", "threads-many",
                      f"{len(infos)} threads: at most {MAX_DEFAULT_VISIBLE_THREADS} "
                      "are shown by default")
        if self.expect_threads is not None and len(infos) != self.expect_threads:
            self.err("threads", "expect-threads",
                     f"{len(infos)} thread(s) in the profile, expected {self.expect_threads}")
        if self.expect_processes is not None:
            pids = {str(i["pid"]) for i in infos if i["pid"] is not None}
            if len(pids) != self.expect_processes:
                self.err("processes", "expect-processes",
                         f"{len(pids)} distinct pid(s) ({', '.join(sorted(pids))}), "
                         f"expected {self.expect_processes}")
        self._check_time_range(meta, infos)

    def _check_time_range(self, meta, infos):
        """Markers (and samples) outside the visible range are not shown."""
        ps, pe = meta.get("profilingStartTime"), meta.get("profilingEndTime")
        explicit = _is_num(ps) and _is_num(pe) and ps <= pe
        if explicit:
            lo, hi = ps, pe
        else:
            lo, hi = math.inf, -math.inf
            interval = meta.get("interval") if _is_num(meta.get("interval")) else 0
            for info in infos:
                d = info["delta"]
                if info["first"] is not None:
                    lo, hi = min(lo, info["first"] + d), max(hi, info["last"] + d + interval)
                else:  # threads without samples extend the range with their markers
                    for s, e, _ in info["markers"]:
                        for v in (s, e):
                            if math.isfinite(v):
                                lo, hi = min(lo, v + d), max(hi, v + d)
            if lo > hi:
                return
        for info in infos:
            d, path = info["delta"], info["path"]
            if explicit and info["times"]:
                out = sum(1 for t in info["times"] if not lo <= t + d <= hi)
                if out:
                    self.warn(f"{path}.samples", "samples-out-of-range",
                              f"{out} of {len(info['times'])} samples lie outside "
                              f"profilingStartTime..profilingEndTime ({lo}..{hi}) "
                              "and are not shown")
            if not explicit and info["first"] is None:
                continue
            outside = [i for s, e, i in info["markers"] if e + d < lo or s + d > hi]
            if outside:
                self.warn(f"{path}.markers.data[{outside[0]}]", "markers-out-of-range",
                          f"{len(outside)} marker(s) lie outside the visible range "
                          f"{lo:g}..{hi:g} ms (top-level time base) and are not shown")


# -- rtprof's own promises (profiles msgpack2gecko wrote) ---------------------------------
AUDIO_RULE_RE = re.compile(r"^(?:Audio|Media|GraphRunner|WebrtcWorker)")  # tracks.ts
GAUGE_FORMATS = frozenset(["integer", "decimal", "percentage", "nanoseconds", "microseconds",
                           "milliseconds", "bytes"])
OVERHEAD_WINDOW_MS = 100.0


class _RtprofRules:
    """What msgpack2gecko promises about the view the front-end opens with. Reads the
    profile directly; shape errors were reported by the generic checks."""

    def __init__(self, checker: _Checker):
        self.c = checker

    def check(self, profile):
        procs = profile.get("processes")
        subs = procs if isinstance(procs, list) else []
        for path, proc in [("", profile)] + [(f"processes[{i}].", sp)
                                             for i, sp in enumerate(subs)]:
            if isinstance(proc, dict) and self._is_rtprof(proc):
                self._check_process(proc, path, profile)

    @staticmethod
    def _is_rtprof(proc):
        log = proc.get("profileGatheringLog")
        return isinstance(log, dict) and \
            str(log.get("converter", "")).startswith("msgpack2gecko")

    def _check_process(self, proc, path, top):
        log = proc["profileGatheringLog"]
        flags = {}
        for e in log.get("threads") or []:
            if isinstance(e, dict) and _is_int(e.get("tid")):
                flags[e["tid"]] = e
        cats = [c.get("name") if isinstance(c, dict) else None
                for c in (top.get("meta", {}).get("categories") or [])]
        schemas = {s.get("name"): s for s in (proc.get("meta", {}).get("markerSchema") or [])
                   if isinstance(s, dict)}
        names = set()
        for i, th in enumerate(proc.get("threads") or []):
            if not isinstance(th, dict):
                continue
            tpath = f"{path}threads[{i}]"
            e = flags.get(th.get("tid"), {})
            # GeckoMain must keep its name (the process track): not renamed.
            if e.get("realTime") and th.get("name") != "GeckoMain" and \
                    not AUDIO_RULE_RE.match(str(th.get("name", ""))):
                self.c.err(f"{tpath}.name", "rtprof-rt-visible",
                           f"real-time thread named {th.get('name')!r}: the front-end's audio "
                           "rule does not apply (hidden when idle, not ranked for the selection)")
            if e.get("sampler") or th.get("name") == "rtprof sampler":
                self._check_sampler(th, tpath, cats)
            mk = _marker_rows(th)
            names.update(n for n, _, _ in mk)
            self._check_overhead(mk, tpath, _overhead_ticks(th))
        self._check_gauges(schemas, names, f"{path}meta.markerSchema")
        self._check_counters(proc.get("counters"), f"{path}counters")

    def _check_sampler(self, th, path, cats):
        samples = th.get("samples") if isinstance(th.get("samples"), dict) else {}
        sch, data = samples.get("schema") or {}, samples.get("data") or []
        ci = sch.get("threadCPUDelta")
        if ci is not None and any(_is_num(r[ci]) and r[ci] > 0 for r in data
                                  if isinstance(r, list) and len(r) > ci):
            self.c.err(f"{path}.samples", "rtprof-sampler-hidden",
                       "the sampler thread has CPU deltas: its activity shows it on load")
        si = sch.get("stack")
        for k, r in enumerate(data):
            if not isinstance(r, list) or si is None or len(r) <= si:
                continue
            cat = _stack_category(th, r[si])
            if cat is not None and (cat >= len(cats) or cats[cat] != "Idle"):
                self.c.err(f"{path}.samples.data[{k}]", "rtprof-sampler-hidden",
                           "a sampler sample is not Idle: its activity shows it on load")
                return

    def _check_overhead(self, mk, path, ticks):
        ovh = sorted((s, e) for n, s, e in mk if n == "Profiler overhead")
        for s, e in ovh:
            # One tick may itself be longer (its lock wait on a loaded
            # machine): a window never holds more than that one.
            if e - s > OVERHEAD_WINDOW_MS + 1e-6 and ticks.get((s, e)) != 1:
                self.c.err(f"{path}.markers", "rtprof-overhead-rate",
                           f"an overhead marker of {e - s:g} ms: windows are at most "
                           f"{OVERHEAD_WINDOW_MS:g} ms")
                return
        starts = [s for s, _ in ovh]
        for k in range(len(starts) - 11):
            if starts[k + 11] - starts[k] <= 1000.0:
                self.c.err(f"{path}.markers", "rtprof-overhead-rate",
                           f"12 overhead markers within 1 s from {starts[k]:g} ms: more than "
                           "one per 100 ms")
                return

    def _check_gauges(self, schemas, names, path):
        for name, s in schemas.items():
            if not isinstance(name, str) or not name.startswith("rtprof.counter."):
                continue
            fields = {f.get("key"): f.get("format") for f in s.get("data") or []
                      if isinstance(f, dict) and "key" in f}
            graphs = [g.get("key") for g in s.get("graphs") or [] if isinstance(g, dict)]
            track = name[len("rtprof.counter."):]
            why = None
            if graphs != ["value"]:
                why = f"graphs {graphs}, want one of `value`"
            elif fields.get("value") not in GAUGE_FORMATS:
                why = f"value format {fields.get('value')!r} is not a unit's"
            elif track not in names:
                why = f"no marker named {track!r}: no track"
            if why:
                self.c.err(f"{path}", "rtprof-gauge-track", f"{name}: {why}")

    def _check_counters(self, counters, path):
        for i, c in enumerate(counters if isinstance(counters, list) else []):
            if not isinstance(c, dict):
                continue
            if c.get("category") != "Memory":
                self.c.err(f"{path}[{i}]", "rtprof-gauge-counter",
                           f"counter {c.get('name')!r} ({c.get('category')}) is a Gecko counter: "
                           "the front-end draws its changes as a rate, not its values")
                continue
            smp = c.get("samples") if isinstance(c.get("samples"), dict) else {}
            rows, ci = smp.get("data") or [], (smp.get("schema") or {}).get("count")
            if rows and ci is not None and isinstance(rows[0], list) and \
                    len(rows[0]) > ci and rows[0][ci] != 0:
                self.c.err(f"{path}[{i}].samples.data[0]", "rtprof-memory-zero",
                           f"counter {c.get('name')!r} starts at {rows[0][ci]}, not 0: the "
                           "front-end zeroes the first count (processCounter), that change "
                           "would be lost")


def _overhead_ticks(th):
    """{(start, end): ticks} of a thread's overhead markers."""
    mk = th.get("markers") if isinstance(th.get("markers"), dict) else {}
    sch, st = mk.get("schema") or {}, th.get("stringTable") or []
    out = {}
    for r in mk.get("data") or []:
        try:
            if st[r[sch["name"]]] == "Profiler overhead":
                out[(r[sch["startTime"]], r[sch["endTime"]])] = \
                    r[sch["data"]].get("ticks")
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
    return out


def _marker_rows(th):
    """(name, start, end) of a thread's markers, end = start for instants."""
    mk = th.get("markers") if isinstance(th.get("markers"), dict) else {}
    sch, st = mk.get("schema") or {}, th.get("stringTable") or []
    out = []
    for r in mk.get("data") or []:
        try:
            name = st[r[sch["name"]]]
            s = r[sch["startTime"]]
            e = r[sch["endTime"]] if r[sch["endTime"]] is not None else s
        except (KeyError, IndexError, TypeError):
            continue
        if _is_num(s) and _is_num(e):
            out.append((name, s, e))
    return out


def _stack_category(th, stack):
    """The category index of a stack's leaf frame, or None."""
    try:
        sk, ft = th["stackTable"], th["frameTable"]
        f = sk["data"][stack][sk["schema"]["frame"]]
        return ft["data"][f][ft["schema"]["category"]]
    except (KeyError, IndexError, TypeError):
        return None


def check_issues(profile, *, strict_version=True, require_samples=False, expect_threads=None,
                 expect_processes=None, no_js_shapes=False, max_per_rule=20) -> list[Issue]:
    """Check a parsed Gecko profile; returns Issue objects (errors and warnings)."""
    return _Checker(strict_version, require_samples, expect_threads, expect_processes,
                    no_js_shapes, max_per_rule).check(profile)


def check(profile, **options) -> list[str]:
    """Check a parsed Gecko profile. Returns one string per violation: errors as
    "path: message [rule]", warnings as "warning: path: message [rule]".
    Options: strict_version (default True), require_samples, expect_threads,
    expect_processes, no_js_shapes, max_per_rule (default 20, 0 = unlimited)."""
    return [str(i) for i in check_issues(profile, **options)]


class ProfileLoadError(Exception):
    pass


def _reject_constant(name):
    raise ProfileLoadError(f"{name} is not valid JSON (the browser's JSON.parse rejects it)")


def load_profile(path: str):
    """Read PATH (gzip sniffed by magic bytes) and parse it. Returns (profile, text_size);
    raises ProfileLoadError if unreadable or not JSON."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
        if text.startswith("\ufeff"):
            raise ProfileLoadError("starts with a UTF-8 byte order mark (JSON.parse rejects it)")
        return json.loads(text, parse_constant=_reject_constant), len(raw)
    except ProfileLoadError:
        raise
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ProfileLoadError(f"cannot read: {e}") from e
    except UnicodeDecodeError as e:
        raise ProfileLoadError(f"not UTF-8: {e}") from e
    except (json.JSONDecodeError, RecursionError) as e:
        raise ProfileLoadError(f"invalid JSON: {e}") from e


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="gecko_check.py",
        description="Check Firefox Profiler Gecko profiles against "
                    "/work/shared/docs/gecko-format.md.")
    ap.add_argument("files", nargs="*", metavar="PROFILE.json[.gz]")
    ap.add_argument("--require-samples", action="store_true",
                    help="a thread with no sample is an error (default: a warning)")
    ap.add_argument("--expect-threads", type=int, metavar="N",
                    help="the profile must hold exactly N threads (sub-processes included)")
    ap.add_argument("--expect-processes", type=int, metavar="N",
                    help="the threads must carry exactly N distinct pids")
    ap.add_argument("--strict-version", dest="strict_version", action="store_true", default=True,
                    help="meta.version must be exactly %d (default)" % GECKO_VERSION)
    ap.add_argument("--any-version", dest="strict_version", action="store_false",
                    help="accept any meta.version <= %d" % GECKO_VERSION)
    ap.add_argument("--no-js-shapes", action="store_true",
                    help="JavaScript-shaped frame locations are errors (default: warnings)")
    ap.add_argument("--werror", action="store_true",
                    help="warnings count as errors for the exit code")
    ap.add_argument("--quiet", action="store_true",
                    help="print errors only: no warnings, no summary")
    ap.add_argument("--max-per-rule", type=int, default=20, metavar="N",
                    help="print at most N reports per rule and thread (0: all; default 20)")
    ap.add_argument("--list-rules", action="store_true", help="list the rule ids and exit")
    args = ap.parse_args(argv)
    if args.list_rules:
        for rule, (level, text) in RULES.items():
            print(f"{rule:28} {level:9} {text}")
        return 0
    if not args.files:
        ap.error("no profile given")
    status = 0
    for name in args.files:
        try:
            profile, size = load_profile(name)
        except ProfileLoadError as e:
            print(f"{name}: {e}", file=sys.stderr)
            status = 2
            continue
        issues = check_issues(profile, strict_version=args.strict_version,
                              require_samples=args.require_samples,
                              expect_threads=args.expect_threads,
                              expect_processes=args.expect_processes,
                              no_js_shapes=args.no_js_shapes, max_per_rule=args.max_per_rule)
        if size >= HUGE_JSON_BYTES:
            issues.insert(0, Issue("warning", "(file)", "json-huge",
                                   f"{size} bytes of JSON text: the browser fails to parse about "
                                   "500 MB; cut the profile down"))
        errors = sum(1 for i in issues if i.level == "error")
        warnings = len(issues) - errors
        for issue in issues:
            if issue.level == "error" or not args.quiet:
                print(f"{name}: {issue}")
        if not args.quiet:
            print(f"{name}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
        if errors or (args.werror and warnings):
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
