"""SQL over nsys SQLite exports (schemas 2020.3 … 2025.x) and the nsys codes our tables normalize.

Summaries are computed the way ``nsys stats`` reports do (group by name; count, total, mean,
median, min, max, sample stddev): the queries here select the events as (k, grp, key, aux, d)
rows and :mod:`generator.readers.sqlite_columnar` aggregates them. The input file is only read.
"""
from __future__ import annotations

from generator.readers.validate import bounded_name_sql
from generator.run_layout import CAPTURE_NVTX_DOMAINS

#: NVTX_EVENTS.eventType values of ranges, as nsys' nvtx_sum report selects them.
NVTX_RANGE_STYLES: dict[int, str] = {59: "PushPop", 60: "StartEnd", 70: "PushPop", 71: "StartEnd"}
NVTX_DOMAIN_CREATE = 75
_RANGE_TYPES = ", ".join(str(t) for t in NVTX_RANGE_STYLES)

#: CUPTI memcpy kinds (CUPTI_ACTIVITY_KIND_MEMCPY.copyKind) → normalized operation.
MEMCPY_KINDS: dict[int, str] = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
    8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH", 13: "UVM DtoD",
}


# --- sources (k, grp, key, aux, d) of the summaries (statistics: readers.sqlite_columnar) ----------

#: Every column costs the Arrow conversion time (≈ 0.1 s per million rows): sources whose grp, key
#: and aux follow from k select (k, d) or (k, aux, d) and name the rest in ``*_PROJECT`` (DuckDB).
KERNELS_ALL = "SELECT demangledName AS k, shortName AS aux, end - start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL"
KERNELS_ALL_PROJECT = "k, NULL AS grp, k AS key, aux, d"

#: The merged ranges of temp.stage_ranges with their stage's index (the DuckDB table ``ranges``).
STAGE_RANGES = """
SELECT g.stage, w.idx, g.tid, g.start, g.end FROM temp.stage_ranges AS g JOIN temp.wanted AS w USING (stage)"""


def runtime_calls(first: int, last: int) -> str:
    """Runtime API calls that can launch work and start in [first, last] ns, the stages' span (the
    DuckDB view ``calls``)."""
    return f"""
SELECT globalTid AS tid, correlationId AS corr, start FROM CUPTI_ACTIVITY_KIND_RUNTIME
WHERE correlationId IS NOT NULL AND start BETWEEN {int(first)} AND {int(last)}"""


#: Kernels with the process and correlation id of their launch call (the view ``kernels``).
KERNEL_LAUNCHES = """
SELECT demangledName AS name, shortName AS aux, correlationId AS corr, globalPid >> 24 AS pid, end - start AS d
FROM CUPTI_ACTIVITY_KIND_KERNEL"""
#: DuckDB: kernels whose launch call starts inside a merged range of a stage on its thread (the
#: ranges of one stage and thread are disjoint, so a call is counted once per stage); k packs the
#: stage's index above the 32-bit StringIds id of the name.
KERNELS_IN_RANGES = """
WITH staged AS (
    SELECT g.idx, g.stage, c.corr, c.tid >> 24 AS pid
    FROM calls AS c JOIN ranges AS g ON g.tid = c.tid AND g.s <= c.start AND g.e >= c.start
)
SELECT (c.idx << 32) + k.name AS k, c.stage AS grp, k.name AS key, k.aux AS aux, k.d AS d
FROM kernels AS k JOIN staged AS c ON c.corr = k.corr AND c.pid = k.pid
"""
#: DuckDB: launches per (stage, process, demangled name id) of the kernels KERNELS_IN_RANGES counts;
#: the process is its OS pid (the low 24 bits of nsys' ``globalPid >> 24``).
PROCESS_KERNELS_IN_RANGES = """
WITH staged AS (
    SELECT g.stage, c.corr, c.tid >> 24 AS pid
    FROM calls AS c JOIN ranges AS g ON g.tid = c.tid AND g.s <= c.start AND g.e >= c.start
)
SELECT c.stage, k.pid & 16777215 AS pid, k.name, count(*) AS n
FROM kernels AS k JOIN staged AS c ON c.corr = k.corr AND c.pid = k.pid GROUP BY ALL
"""

RUNTIME_ALL = "SELECT nameId AS k, end - start AS d FROM CUPTI_ACTIVITY_KIND_RUNTIME"
RUNTIME_ALL_PROJECT = "k, '' AS grp, k AS key, 0 AS aux, d"

MEMCPY_TIMES = """
SELECT copyKind AS k, '' AS grp, copyKind AS key, 0 AS aux, end - start AS d FROM CUPTI_ACTIVITY_KIND_MEMCPY"""
MEMSET_TIMES = "SELECT -1 AS k, '' AS grp, -1 AS key, 0 AS aux, end - start AS d FROM CUPTI_ACTIVITY_KIND_MEMSET"
MEMCPY_BYTES = "SELECT copyKind AS key, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"
MEMSET_BYTES = "SELECT -1 AS key, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET"


#: An NVTX event's name: inline ``text`` or a registered string (``textId`` → StringIds).
_NAME = "coalesce(ne.text, sid.value, '')"
_NAME_JOIN = "LEFT JOIN StringIds AS sid ON sid.id = ne.textId"


#: Named NVTX domains per process (nvtxDomainCreate events) and the ``domain:name`` of a range.
_DOMAINS = f"""domains AS (
    SELECT domainId AS id, globalTid & 0x0000FFFFFF000000 AS pid, min(text) AS name
    FROM NVTX_EVENTS WHERE eventType = {NVTX_DOMAIN_CREATE} GROUP BY 1, 2
)"""
_DOMAIN_JOIN = "LEFT JOIN domains AS dom ON dom.id = ne.domainId AND dom.pid = (ne.globalTid & 0x0000FFFFFF000000)"
_FULL_NAME = f"CASE WHEN dom.name IS NOT NULL THEN dom.name || ':' || {_NAME} ELSE {_NAME} END"


def nvtx_ranges() -> str:
    """NVTX ranges as (k, grp=style, key=name, aux, d, start), named ``domain:name`` in named domains as
    nvtx_sum does (bounded: validate.bounded_name_sql). A range without an end lasts until the last
    NVTX timestamp, as nsys counts it.
    """
    styles = " ".join(f"WHEN {t} THEN '{s}'" for t, s in NVTX_RANGE_STYLES.items())
    return f"""
WITH {_DOMAINS}, last AS (SELECT max(max(start), coalesce(max(end), 0)) AS t FROM NVTX_EVENTS),
named AS (
    SELECT CASE ne.eventType {styles} END AS grp, {_FULL_NAME} AS full_name, 0 AS aux,
           coalesce(ne.end, (SELECT t FROM last)) - ne.start AS d, ne.start AS start
    FROM NVTX_EVENTS AS ne {_DOMAIN_JOIN} {_NAME_JOIN}
    WHERE ne.eventType IN ({_RANGE_TYPES})
),
r AS (SELECT grp, {bounded_name_sql("full_name")} AS key, aux, d, start FROM named)
SELECT grp || char(31) || key AS k, grp, key, aux, d, start FROM r
"""


# --- NVTX stage restriction --------------------------------------------------------------------

#: One row per requested stage: its label, the range name, and optionally which instances
#: (1-based ``first`` and ``count`` in start order, as in ``--filter-nvtx NAME/INDEX/COUNT``).
CREATE_WANTED = """
CREATE TEMP TABLE wanted (stage TEXT PRIMARY KEY, idx INTEGER NOT NULL, name TEXT NOT NULL,
                          first INTEGER, count INTEGER)
"""
INSERT_WANTED = "INSERT OR IGNORE INTO temp.wanted VALUES (?, ?, ?, ?, ?)"


def create_stage_events() -> str:
    """temp.stage_events: every ended range of each wanted stage's name (any thread), numbered
    (``ordinal``) in order of start.

    A stage names a range as ``domain:name``, or by its text alone outside the capture's own domains
    (run_layout.CAPTURE_NVTX_DOMAINS: module ranges, profile windows, operator marks are no stages).
    """
    capture = ", ".join(f"'{d}'" for d in CAPTURE_NVTX_DOMAINS)
    return f"""
CREATE TEMP TABLE stage_events AS
WITH {_DOMAINS}
SELECT w.stage AS stage, ne.globalTid AS tid, ne.start AS start, ne.end AS end, w.first, w.count,
       row_number() OVER (PARTITION BY w.stage ORDER BY ne.start, ne.globalTid) AS ordinal
FROM NVTX_EVENTS AS ne {_DOMAIN_JOIN} {_NAME_JOIN}
JOIN temp.wanted AS w ON w.name = {_FULL_NAME} OR (w.name = {_NAME} AND coalesce(dom.name, '') NOT IN ({capture}))
WHERE ne.eventType IN ({_RANGE_TYPES}) AND ne.end IS NOT NULL
"""


#: (stage, instances): how many ranges of each wanted stage's name the capture holds, before any
#: INDEX/COUNT selection.
STAGE_INSTANCES = "SELECT stage, count(*) FROM temp.stage_events GROUP BY stage"


def create_stage_ranges() -> str:
    """temp.stage_ranges: the wanted ranges of temp.stage_events per (stage, thread), overlapping
    ones merged. Without ``first`` every instance counts, with it only instances first … first +
    count - 1 in order of start.

    Merging nested or overlapping ranges of one name makes the intervals disjoint, so a call lies
    in at most one and is counted once; ``inst`` numbers the merged intervals. Times are INTEGER
    columns, so the index serves range conditions on ``start``.
    """
    return """
CREATE TEMP TABLE stage_ranges AS
WITH r AS (
    SELECT stage, tid, start, end FROM temp.stage_events
    WHERE first IS NULL OR ordinal BETWEEN first AND first + coalesce(count, 1) - 1
), o AS (
    SELECT *, max(end) OVER (PARTITION BY stage, tid ORDER BY start, end
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM r
), g AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR start > reach THEN 1 ELSE 0 END)
                  OVER (PARTITION BY stage, tid ORDER BY start, end ROWS UNBOUNDED PRECEDING) AS inst
    FROM o
)
SELECT stage, tid, inst, CAST(min(start) AS INTEGER) AS start, CAST(max(end) AS INTEGER) AS end
FROM g GROUP BY stage, tid, inst
"""


INDEX_STAGE_RANGES = "CREATE INDEX temp.stage_ranges_at ON stage_ranges (stage, tid, start)"
#: The first start and last end of temp.stage_ranges.
STAGE_SPAN = "SELECT min(start), max(end) FROM temp.stage_ranges"

#: temp.stage_calls: runtime API calls (correlation id, process; thread, start time and name id)
#: that start inside a merged range of the stage on their thread. Merged ranges are disjoint, so
#: only the latest one starting before the call can hold it; calls outside the stages' span are
#: not looked up.
CREATE_STAGE_CALLS = """
CREATE TEMP TABLE stage_calls AS
SELECT w.stage AS stage, w.idx AS idx, r.correlationId AS corr, r.globalTid >> 24 AS pid, g.inst AS inst,
       r.globalTid AS tid, r.start AS t, r.nameId AS name
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
CROSS JOIN temp.wanted AS w
JOIN temp.stage_ranges AS g ON g.rowid = (
    SELECT h.rowid FROM temp.stage_ranges AS h
    WHERE h.stage = w.stage AND h.tid = r.globalTid AND h.start <= r.start
    ORDER BY h.start DESC LIMIT 1)
WHERE r.correlationId IS NOT NULL AND g.end >= r.start
  AND r.start >= (SELECT min(start) FROM temp.stage_ranges) AND r.start <= (SELECT max(end) FROM temp.stage_ranges)
"""
INDEX_STAGE_CALLS = "CREATE INDEX temp.stage_calls_corr ON stage_calls (corr, pid)"
#: Per stage, the duration of each kernel launch call (``cudaLaunchKernel`` and its versions) made
#: inside it: the host cost of a launch in that stage, not the whole process's.
STAGE_LAUNCH_CALLS = """
SELECT c.stage, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN temp.stage_calls AS c ON c.corr = r.correlationId AND c.pid = r.globalTid >> 24 AND c.t = r.start
WHERE r.nameId IN (SELECT id FROM StringIds WHERE value = 'cudaLaunchKernel' OR value LIKE 'cudaLaunchKernel\\_v%' ESCAPE '\\')
"""


def create_stage_kernels(node_column: bool) -> str:
    """temp.stage_kernels: each kernel launched by a call of temp.stage_calls, with the call's
    stage, stage instance, thread and time (``node``: its CUDA graph node, NULL when none)."""
    node = "k.graphNodeId" if node_column else "NULL"
    return f"""
CREATE TEMP TABLE stage_kernels AS
SELECT c.stage AS stage, c.idx AS idx, c.inst AS inst, c.tid AS tid, c.t AS t, k.deviceId AS device,
       k.start AS start, k.end AS end, k.demangledName AS name, {node} AS node
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN temp.stage_calls AS c ON c.corr = k.correlationId AND c.pid = k.globalPid >> 24
"""

#: Every launch of temp.stage_kernels (stage, instance, name id, start, end).
STAGE_LAUNCHES = 'SELECT stage, inst, name, start, "end" FROM temp.stage_kernels'
#: Every launch of the capture as one stage (instance 0).
ALL_LAUNCHES = 'SELECT ? AS stage, 0 AS inst, demangledName AS name, start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL'

# --- GPU timeline per stage (sweep analysis) -----------------------------------------------------


#: Every kernel's device and times (the DuckDB table ``kernel_times`` of the whole-capture timeline).
KERNEL_TIMES = "SELECT deviceId AS device, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"
#: Every whole-graph replay's, appended to KERNEL_TIMES where the file has them.
GRAPH_TIMES = " UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"


def timeline(staged: bool, graph_trace: bool = False) -> str:
    """Per (stage, device): launches, kernel time, busy time, idle gaps and wall span; in SQLite
    over temp.stage_kernels (``staged``; with ``graph_trace`` the whole-graph replays of
    temp.stage_calls too, each one launch), else in DuckDB over ``kernel_times``, the stage bound as
    the one parameter (the text suits both: "end" quoted, integer halves as shifts).

    Within one stage instance (a merged NVTX range, or the whole capture) kernels are ordered by
    start per device; a gap is the time from the latest end so far (LAG of the running max, so
    overlapping streams do not count as idle) to the next start, counted when positive.
    """
    if staged:
        source = """
SELECT stage, inst, device, start, "end" FROM temp.stage_kernels"""
        if graph_trace:
            source += """ UNION ALL
SELECT c.stage, c.inst, g.deviceId, g.start, g."end" FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
JOIN temp.stage_calls AS c ON c.corr = g.correlationId AND c.pid = g.globalPid >> 24"""
    else:
        source = """
SELECT CAST(? AS VARCHAR) AS stage, 0 AS inst, device, start, "end" FROM kernel_times"""
    return f"""
WITH k AS ({source}
), r AS (
    SELECT *, max("end") OVER (PARTITION BY stage, inst, device ORDER BY start, "end"
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM k
), g AS (
    SELECT *, CASE WHEN start > reach THEN start - reach END AS gap FROM r
), gaps AS (
    SELECT stage, device, gap,
           row_number() OVER (PARTITION BY stage, device ORDER BY gap) AS rn,
           count(*) OVER (PARTITION BY stage, device) AS cnt
    FROM g WHERE gap IS NOT NULL
), med AS (
    SELECT stage, device, avg(gap) AS idle_med_ns FROM gaps
    WHERE rn IN ((cnt + 1) >> 1, (cnt >> 1) + 1) GROUP BY stage, device
), inst AS (
    SELECT stage, device, inst, count(*) AS launches, sum("end" - start) AS kernel_ns,
           coalesce(sum(gap), 0) AS idle_ns, count(gap) AS idle_count,
           max("end") - min(start) AS span_ns
    FROM g GROUP BY stage, inst, device
)
SELECT i.stage, i.device, sum(i.launches) AS launches, sum(i.kernel_ns) AS kernel_ns,
       sum(i.span_ns) - sum(i.idle_ns) AS busy_ns, sum(i.idle_ns) AS idle_ns,
       sum(i.idle_count) AS idle_count, m.idle_med_ns, sum(i.span_ns) AS span_ns,
       count(*) AS instances
FROM inst AS i LEFT JOIN med AS m ON m.stage = i.stage AND m.device = i.device
GROUP BY i.stage, i.device, m.idle_med_ns
"""

# --- CUDA graphs ---------------------------------------------------------------------------------
# With ``nsys --cuda-graph-trace=node`` each replayed kernel is a CUPTI_ACTIVITY_KIND_KERNEL row with
# ``graphNodeId`` set and the correlationId of its ``cudaGraphLaunch`` call, so the stage of the
# launch call is the stage of every kernel the replay ran (KERNELS_IN_RANGES needs nothing more).
# With the default ``--cuda-graph-trace=graph`` a replay is one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row
# (start, end, correlationId, graphId) and its kernels are not in the export: each graph becomes one
# kernel-summary row of the stage that launched it (WHOLE_GRAPHS_*, model.WHOLE_GRAPH_NAME).

GRAPH_LAUNCH_API = "cudaGraphLaunch"
#: The StringIds ids of its names (``cudaGraphLaunch``, ``cudaGraphLaunch_v10000``): looked up once,
#: not once per call row.
_GRAPH_LAUNCH_IDS = (f"SELECT id FROM StringIds WHERE value = '{GRAPH_LAUNCH_API}' "
                     f"OR value LIKE '{GRAPH_LAUNCH_API}\\_v%' ESCAPE '\\'")


def graph_stage_summary(graph_trace: bool) -> str:
    """Per stage (of temp.stage_calls and temp.stage_kernels): graph launch calls, kernels run inside
    graphs and their GPU time, all kernel time, and whole-graph rows (launches, GPU time) where the
    file has them."""
    trace = """
    SELECT c.stage, count(*) AS n, sum(g.end - g.start) AS ns FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
    JOIN temp.stage_calls AS c ON c.corr = g.correlationId AND c.pid = g.globalPid >> 24 GROUP BY c.stage""" \
        if graph_trace else "SELECT NULL AS stage, 0 AS n, 0 AS ns WHERE 0"
    return f"""
WITH launches AS (
    SELECT stage, count(*) AS n FROM temp.stage_calls WHERE name IN ({_GRAPH_LAUNCH_IDS}) GROUP BY stage
), kernels AS (
    SELECT stage, sum(node IS NOT NULL) AS node_n, sum(CASE WHEN node IS NOT NULL THEN end - start ELSE 0 END) AS node_ns,
           count(*) AS n, sum(end - start) AS ns
    FROM temp.stage_kernels GROUP BY stage
), trace AS ({trace}
)
SELECT w.stage, coalesce(l.n, 0), coalesce(k.node_n, 0), coalesce(k.node_ns, 0), coalesce(k.n, 0),
       coalesce(k.ns, 0), coalesce(t.n, 0), coalesce(t.ns, 0)
FROM temp.wanted AS w LEFT JOIN launches AS l ON l.stage = w.stage LEFT JOIN kernels AS k ON k.stage = w.stage
LEFT JOIN trace AS t ON t.stage = w.stage
ORDER BY w.idx
"""


#: Each whole-graph replay (CUPTI_ACTIVITY_KIND_GRAPH_TRACE row) as (stage, graph id, GPU time): in
#: the stage whose temp.stage_calls call launched it, or of the whole capture (the stage bound).
WHOLE_GRAPHS_STAGED = """
SELECT c.stage, g.graphId, g.end - g.start FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
JOIN temp.stage_calls AS c ON c.corr = g.correlationId AND c.pid = g.globalPid >> 24"""
WHOLE_GRAPHS_ALL = "SELECT ?, graphId, end - start FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"


def graph_capture_totals(node_column: bool, graph_trace: bool, runtime: bool) -> str:
    """The whole capture's row of :func:`graph_stage_summary` (no NVTX restriction): the same
    columns over every launch of the file, ``stage`` bound as the one parameter."""
    node = "graphNodeId IS NOT NULL" if node_column else "0"
    launches = f"(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN ({_GRAPH_LAUNCH_IDS}))" \
        if runtime else "0"
    trace = ("(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE), "
             "(SELECT coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE)") if graph_trace else "0, 0"
    return f"""
SELECT ?, {launches}, coalesce(sum({node}), 0), coalesce(sum(CASE WHEN {node} THEN end - start ELSE 0 END), 0),
       count(*), coalesce(sum(end - start), 0), {trace}
FROM CUPTI_ACTIVITY_KIND_KERNEL
"""


# --- NVTX module ranges (capture --module-depth) ---------------------------------------------------


def create_domain_ranges(table: str) -> str:
    """temp.``table``: the ended ranges of one NVTX domain (bind its name as the one parameter) per
    thread, with ``occurrence``: how many ranges of that name the thread had opened up to and
    including this one (the module ranges; the operator marks, ``name`` run_layout.OP_RANGE or
    MEASURED_RANGE)."""
    return f"""
CREATE TEMP TABLE {table} AS
WITH {_DOMAINS}
SELECT ne.globalTid AS tid, ne.start AS start, ne.end AS end, {_NAME} AS name,
       row_number() OVER (PARTITION BY ne.globalTid, {_NAME} ORDER BY ne.start) AS occurrence
FROM NVTX_EVENTS AS ne {_DOMAIN_JOIN} {_NAME_JOIN}
WHERE ne.eventType IN ({_RANGE_TYPES}) AND ne.end IS NOT NULL AND dom.name = ?
"""


def create_launch_sequence(table: str) -> str:
    """temp.``table``: the kernel launches of the calls thread :tid made in [:start, :end], numbered in
    call order (a graph launch's kernels by start), with what tells one launch from another for ncu."""
    return f"""
CREATE TEMP TABLE {table} AS
SELECT row_number() OVER (ORDER BY r.start, k.start) AS pos, r.start AS t, k.mangledName AS name,
       k.gridX AS gx, k.gridY AS gy, k.gridZ AS gz, k.blockX AS bx, k.blockY AS by, k.blockZ AS bz,
       k.staticSharedMemory + k.dynamicSharedMemory AS smem
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24
WHERE r.globalTid = :tid AND r.start >= :start AND r.start <= :end
"""


#: (launches marked, launches measured, positions where both launch the same kernel alike).
SEQUENCES_AGREE = """
SELECT (SELECT count(*) FROM temp.marked_seq), (SELECT count(*) FROM temp.measured_seq),
       (SELECT count(*) FROM temp.marked_seq AS w JOIN temp.measured_seq AS m USING (pos)
        WHERE w.name = m.name AND w.gx = m.gx AND w.gy = m.gy AND w.gz = m.gz AND w.bx = m.bx
          AND w.by = m.by AND w.bz = m.bz AND w.smem = m.smem)"""
#: Positions of temp.measured_seq that launch the first marked launch alike (where a run may start).
RUN_STARTS = """
SELECT m.pos FROM temp.measured_seq AS m JOIN temp.marked_seq AS w ON w.pos = 1
WHERE w.name = m.name AND w.gx = m.gx AND w.gy = m.gy AND w.gz = m.gz AND w.bx = m.bx AND w.by = m.by
  AND w.bz = m.bz AND w.smem = m.smem ORDER BY m.pos LIMIT :limit"""
#: Marked launches alike the measured ones :at positions later.
RUN_ALIKE = """
SELECT count(*) FROM temp.marked_seq AS w JOIN temp.measured_seq AS m ON m.pos = w.pos + :at
WHERE w.name = m.name AND w.gx = m.gx AND w.gy = m.gy AND w.gz = m.gz AND w.bx = m.bx
  AND w.by = m.by AND w.bz = m.bz AND w.smem = m.smem"""
#: temp.marked_ops: the operator ranges of thread :tid, numbered from 1 in order.
CREATE_MARKED_OPS = """
CREATE TEMP TABLE marked_ops AS
SELECT row_number() OVER (ORDER BY start) AS op, start, end FROM temp.op_marks WHERE tid = :tid AND name = :name"""
INDEX_MARKED_OPS = "CREATE INDEX temp.marked_ops_start ON marked_ops (start)"
#: temp.launch_ops: each measured launch call (its start) and the number of the operator call that
#: made the launch at the same position of the marked iteration.
CREATE_LAUNCH_OPS = """
CREATE TEMP TABLE launch_ops AS
SELECT DISTINCT m.t AS t, o.op AS op
FROM temp.measured_seq AS m JOIN temp.marked_seq AS w USING (pos)
JOIN temp.marked_ops AS o ON o.rowid = (
    SELECT h.rowid FROM temp.marked_ops AS h WHERE h.start <= w.t ORDER BY h.start DESC LIMIT 1)
WHERE o.end >= w.t"""
LAUNCH_OP = "SELECT op FROM temp.launch_ops WHERE t = :t"




def stage_launch_calls(node_column: bool) -> str:
    """Every kernel launched by a call of temp.stage_calls: stage, name id, duration, grid, block,
    CUDA graph node (NULL when none) and the call's time."""
    node = "k.graphNodeId" if node_column else "NULL"
    return f"""
SELECT c.stage, k.demangledName, k.end - k.start, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
       {node}, c.t
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN temp.stage_calls AS c ON c.corr = k.correlationId AND c.pid = k.globalPid >> 24
ORDER BY c.stage, k.start"""


#: Per CUDA graph node that ran a kernel of the stages: the operator mark (name and number on its
#: thread, temp.op_marks) open where its original node was created; names bound as two parameters.
NODE_OPERATORS = """
WITH nodes AS (
    SELECT DISTINCT node FROM temp.stage_kernels WHERE node IS NOT NULL
), origin AS (
    SELECT n.node AS node, coalesce(max(e.originalGraphNodeId), n.node) AS original
    FROM nodes AS n LEFT JOIN CUDA_GRAPH_NODE_EVENTS AS e ON e.graphNodeId = n.node GROUP BY n.node
), created AS (
    SELECT o.node AS node, min(c.start) AS t, min(c.globalTid) AS tid
    FROM origin AS o JOIN CUDA_GRAPH_NODE_EVENTS AS c ON c.graphNodeId = o.original GROUP BY o.node
), mark AS (
    SELECT c.node AS node, (SELECT m.rowid FROM temp.op_marks AS m
                            WHERE m.tid = c.tid AND m.start <= c.t AND m.end >= c.t AND m.name IN (?, ?)
                            ORDER BY m.start DESC LIMIT 1) AS id
    FROM created AS c
)
SELECT k.node, m.name, m.occurrence FROM mark AS k LEFT JOIN temp.op_marks AS m ON m.rowid = k.id
"""
INDEX_MODULE_RANGES = "CREATE INDEX temp.module_ranges_at ON module_ranges (tid, start)"
#: The innermost module range open at time ? on thread ? (name, occurrence), if any.
INNERMOST_MODULE = """
SELECT name, occurrence FROM temp.module_ranges WHERE tid = :tid AND start <= :t AND end >= :t
ORDER BY start DESC LIMIT 1"""
#: Module ranges of thread ? that ended in [?, ?] (the calls a gap between modules follows).
MODULES_ENDED = "SELECT count(*) FROM temp.module_ranges WHERE tid = :tid AND end >= :since AND end <= :t"


def representative_launches(node_column: bool) -> str:
    """Per (stage, kernel) of temp.wanted_names: the launch configuration carrying most of the
    stage's time for that kernel and the first launch with it (its call's thread and time, stage
    instance, graph node). Configuration = grid, block, static + dynamic shared memory."""
    node = "k.graphNodeId" if node_column else "NULL"
    return f"""
WITH l AS (
    SELECT c.stage AS stage, c.idx AS idx, c.inst AS inst, c.tid AS tid, c.t AS t,
           k.demangledName AS name, k.gridX AS gx, k.gridY AS gy, k.gridZ AS gz, k.blockX AS bx,
           k.blockY AS by, k.blockZ AS bz, k.staticSharedMemory + k.dynamicSharedMemory AS smem,
           k.end - k.start AS d, k.start AS kstart, {node} AS node
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    JOIN temp.stage_calls AS c ON c.corr = k.correlationId AND c.pid = k.globalPid >> 24
    WHERE k.demangledName IN (SELECT id FROM temp.wanted_names)
), cfg AS (
    SELECT stage, idx, name, gx, gy, gz, bx, by, bz, smem, sum(d) AS cfg_ns, count(*) AS cfg_n,
           min(kstart) AS first_start
    FROM l GROUP BY stage, idx, name, gx, gy, gz, bx, by, bz, smem
), tot AS (
    SELECT stage, name, sum(cfg_ns) AS ns, sum(cfg_n) AS n, count(*) AS configs FROM cfg GROUP BY stage, name
), best AS (
    SELECT *, row_number() OVER (PARTITION BY stage, name ORDER BY cfg_ns DESC, cfg_n DESC, first_start) AS rk
    FROM cfg
)
SELECT b.stage, b.idx, b.name, b.gx, b.gy, b.gz, b.bx, b.by, b.bz, b.smem, b.cfg_ns, b.cfg_n,
       t.ns, t.n, t.configs, l.inst, l.tid, l.t, l.node
FROM best AS b
JOIN tot AS t ON t.stage = b.stage AND t.name = b.name
JOIN l ON l.stage = b.stage AND l.name = b.name AND l.kstart = b.first_start
WHERE b.rk = 1
GROUP BY b.stage, b.name
ORDER BY b.idx, b.cfg_ns DESC
"""

#: Per graph node that ran a kernel: the node its instantiation cloned (``originalGraphNodeId``;
#: the node itself when not a clone) and the innermost module range open on the thread when that
#: node was created, i.e. when the kernel launch was captured into the graph (NULL: none open).
GRAPH_NODE_MODULES = """
WITH nodes AS (
    SELECT DISTINCT graphNodeId AS node FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL
), origin AS (
    SELECT n.node AS node, coalesce(max(e.originalGraphNodeId), n.node) AS original
    FROM nodes AS n LEFT JOIN CUDA_GRAPH_NODE_EVENTS AS e ON e.graphNodeId = n.node GROUP BY n.node
), created AS (
    SELECT o.node AS node, o.original AS original, min(c.start) AS t, min(c.globalTid) AS tid
    FROM origin AS o JOIN CUDA_GRAPH_NODE_EVENTS AS c ON c.graphNodeId = o.original GROUP BY o.node
)
SELECT c.node, c.original, (SELECT m.name FROM temp.module_ranges AS m
                            WHERE m.tid = c.tid AND m.start <= c.t AND m.end >= c.t
                            ORDER BY m.start DESC LIMIT 1) AS module
FROM created AS c ORDER BY c.node
"""


# --- kernel → module attribution (generator.analyses.modules) --------------------------------------
#: The recognised forms of module ranges (README "Module attribution"); a file's first present form
#: (this order) is used, forms are not mixed. form → (condition on a push/pop range, path, class) as
#: SQL over ``n`` (the range's text), ``dname`` (its domain's name) and ``domain`` (its domain id).
MODULE_FORMS: dict[str, tuple[str, str, str]] = {
    # capture --module-depth: domain kr.modules, "qualified.name [Class]"
    "kr.modules": ("dname = 'kr.modules'",
                   "CASE WHEN instr(n, ' [') > 0 THEN substr(n, 1, instr(n, ' [') - 1) ELSE n END",
                   "CASE WHEN instr(n, ' [') > 0 AND n LIKE '%]' "
                   "THEN substr(n, instr(n, ' [') + 2, length(n) - instr(n, ' [') - 2) ELSE '' END"),
    # SGLang --enable-layerwise-nvtx-marker (PytHooks): the dict repr "{'Module': 'top.model…', …}"
    "sglang-layerwise": ("domain = 0 AND n LIKE '{''Module'': ''%'",
                         "substr(n, 13, instr(substr(n, 13), '''') - 1)", "''"),
    # nsys --pytorch=autograd-nvtx (torch.autograd.profiler.emit_nvtx): "aten::addmm, seq = 3, …"
    "autograd-nvtx": ("domain = 0 AND n GLOB '[A-Za-z_]*::[A-Za-z_]*' "
                      "AND instr(substr(n, 1, instr(n, '::')), ' ') = 0",
                      "CASE WHEN instr(n, ',') > 0 THEN substr(n, 1, instr(n, ',') - 1) ELSE n END", "''"),
}


def create_attribution_ranges() -> str:
    """temp.attr_ranges (id, form, tid, start, end, path, cls): every ended push/pop range of a
    recognised form; ``id`` follows (thread, start, longer first), so of a thread's ranges a later
    one has a larger id and of two starting together the outer one comes first."""
    forms = " ".join(f"WHEN {cond} THEN '{form}'" for form, (cond, _, _) in MODULE_FORMS.items())
    paths = " ".join(f"WHEN '{form}' THEN {path}" for form, (_, path, _) in MODULE_FORMS.items())
    classes = " ".join(f"WHEN '{form}' THEN {cls}" for form, (_, _, cls) in MODULE_FORMS.items())
    return f"""
CREATE TEMP TABLE attr_ranges AS
WITH {_DOMAINS}, r AS (
    SELECT ne.globalTid AS tid, ne.start AS start, ne.end AS end, {_NAME} AS n, dom.name AS dname,
           coalesce(ne.domainId, 0) AS domain
    FROM NVTX_EVENTS AS ne {_DOMAIN_JOIN} {_NAME_JOIN}
    WHERE ne.eventType IN (59, 70) AND ne.end IS NOT NULL AND ne.end >= ne.start
), f AS (
    SELECT *, CASE {forms} END AS form FROM r
)
SELECT row_number() OVER (ORDER BY tid, start, end DESC) AS id, form, tid, start, end,
       CASE form {paths} END AS path, CASE form {classes} END AS cls
FROM f WHERE form IS NOT NULL
"""


FORMS_PRESENT = "SELECT DISTINCT form FROM temp.attr_ranges"
#: Keep only the form chosen for the file (its first present in MODULE_FORMS order).
KEEP_FORM = "DELETE FROM temp.attr_ranges WHERE form <> ?"


def create_attribution_launches(graph_nodes: bool) -> str:
    """temp.attr_launches (stage, idx, name, d, tid, t): each kernel of temp.stage_kernels with the
    point its module is read at: its launch call (thread, start), or for a CUDA graph node's kernel
    the creation of the node it was instantiated from (the launch captured into the graph)."""
    created = """
    SELECT o.node AS node, min(c.start) AS t, min(c.globalTid) AS tid
    FROM (SELECT n.node AS node, coalesce(max(e.originalGraphNodeId), n.node) AS original
          FROM (SELECT DISTINCT graphNodeId AS node FROM CUPTI_ACTIVITY_KIND_KERNEL
                WHERE graphNodeId IS NOT NULL) AS n
          LEFT JOIN CUDA_GRAPH_NODE_EVENTS AS e ON e.graphNodeId = n.node GROUP BY n.node) AS o
    JOIN CUDA_GRAPH_NODE_EVENTS AS c ON c.graphNodeId = o.original GROUP BY o.node""" if graph_nodes \
        else "SELECT NULL AS node, NULL AS t, NULL AS tid WHERE 0"
    return f"""
CREATE TEMP TABLE attr_launches AS
WITH created AS ({created}
)
SELECT k.stage AS stage, k.idx AS idx, k.name AS name, k.end - k.start AS d,
       coalesce(g.tid, k.tid) AS tid, coalesce(g.t, k.t) AS t
FROM temp.stage_kernels AS k
LEFT JOIN created AS g ON g.node = k.node
"""


#: temp.attr_points (tid, t, rid): the innermost recognised range open at each distinct point of
#: temp.attr_launches (rid NULL: none open). One sweep per thread over range starts, points and
#: range ends in time order (at one instant: starts, points, ends): the running count of open
#: ranges is the depth D at a point, and as push/pop ranges nest, the innermost open range is the
#: latest one that started at depth D before it. Only ranges overlapping the span of their thread's
#: points take part: one wholly before or after every point adds as much depth as it removes before
#: or after them all (a capture's warm-up and overhead iterations are most of its ranges).
CREATE_ATTRIBUTION_POINTS = """
CREATE TEMP TABLE attr_points AS
WITH spans AS (
    SELECT tid, min(t) AS lo, max(t) AS hi FROM temp.attr_launches GROUP BY tid
), rs AS (
    SELECT r.tid, r.start, r.end, r.id FROM temp.attr_ranges AS r JOIN spans AS s ON s.tid = r.tid
    WHERE r.start <= s.hi AND r.end >= s.lo
), ev AS (
    SELECT tid, start AS t, 0 AS kind, id FROM rs
    UNION ALL SELECT tid, end AS t, 2 AS kind, id FROM rs
    UNION ALL SELECT DISTINCT tid, t, 1 AS kind, NULL AS id FROM temp.attr_launches
), d AS (
    SELECT *, sum(CASE kind WHEN 0 THEN 1 WHEN 2 THEN -1 ELSE 0 END)
                  OVER (PARTITION BY tid ORDER BY t, kind, id ROWS UNBOUNDED PRECEDING) AS depth
    FROM ev
), s AS (
    SELECT tid, t, kind, depth,
           max(CASE WHEN kind = 0 THEN id END)
               OVER (PARTITION BY tid, depth ORDER BY t, kind, id ROWS UNBOUNDED PRECEDING) AS rid
    FROM d
)
SELECT tid, t, CASE WHEN depth > 0 THEN rid END AS rid FROM s WHERE kind = 1
"""
INDEX_ATTRIBUTION_POINTS = "CREATE UNIQUE INDEX temp.attr_points_at ON attr_points (tid, t)"

#: Per (stage, module path, class, kernel name id): launches and GPU time; path NULL = outside any module.
ATTRIBUTED_KERNELS = """
SELECT l.stage, r.path, r.cls, l.name, count(*), sum(l.d)
FROM temp.attr_launches AS l
JOIN temp.attr_points AS p ON p.tid = l.tid AND p.t = l.t
LEFT JOIN temp.attr_ranges AS r ON r.id = p.rid
GROUP BY l.idx, l.stage, r.path, r.cls, l.name
ORDER BY l.idx, r.path, r.cls, l.name
"""
#: Each recognised module path's class (the alphabetically first where ranges of a path disagree).
MODULE_CLASSES = "SELECT path, min(cls) FROM temp.attr_ranges GROUP BY path ORDER BY path"

# --- the workload's own NVTX ranges: default stages of a build without a report.yaml ----------------

#: Named NVTX domains of libraries (their ranges mark library calls, not the workload's phases).
LIBRARY_NVTX_DOMAINS: tuple[str, ...] = ("NCCL", "CCCL", "cuBLAS", "cuBLASLt", "cuDNN", "cuFFT", "cuSOLVER",
                                         "cuSPARSE", "NVSHMEM", "TensorRT", "DALI", "nvImageCodec")


def create_workload_ranges() -> str:
    """temp.workload_ranges (tid, start, end, name, nested): every ended range of the workload's own
    (not the capture's or a library's domains, no module range of a MODULE_FORMS form), named as
    a stage names it (``domain:name`` in named domains); ``nested``: it starts inside an earlier
    such range of its thread (ordered by start, the longer first), so it is no top-level range."""
    excluded = ", ".join(f"'{d}'" for d in CAPTURE_NVTX_DOMAINS + LIBRARY_NVTX_DOMAINS)
    forms = " OR ".join(f"({cond})" for form, (cond, _, _) in MODULE_FORMS.items() if form != "kr.modules")
    return f"""
CREATE TEMP TABLE workload_ranges AS
WITH {_DOMAINS}, r AS (
    SELECT ne.globalTid AS tid, ne.start AS start, ne.end AS end, {_FULL_NAME} AS name, {_NAME} AS n,
           dom.name AS dname, coalesce(ne.domainId, 0) AS domain
    FROM NVTX_EVENTS AS ne {_DOMAIN_JOIN} {_NAME_JOIN}
    WHERE ne.eventType IN ({_RANGE_TYPES}) AND ne.end IS NOT NULL AND ne.end >= ne.start
), w AS (
    SELECT tid, start, end, name FROM r
    WHERE n <> '' AND coalesce(dname, '') NOT IN ({excluded}) AND NOT ({forms})
), o AS (
    SELECT *, max(end) OVER (PARTITION BY tid ORDER BY start, end DESC
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM w
)
SELECT tid, CAST(start AS INTEGER) AS start, CAST(end AS INTEGER) AS end, name,
       coalesce(reach > start, 0) AS nested
FROM o
"""


#: temp.top_ranges: the ranges of names never nested (every instance top-level on its thread), so
#: that a launch call lies in at most one of them.
CREATE_TOP_RANGES = """
CREATE TEMP TABLE top_ranges AS
SELECT tid, start, end, name FROM temp.workload_ranges
WHERE name IN (SELECT name FROM temp.workload_ranges GROUP BY name HAVING max(nested) = 0)
"""
INDEX_TOP_RANGES = "CREATE INDEX temp.top_ranges_at ON top_ranges (tid, start)"


def ranges_holding_kernels(graph_trace: bool) -> str:
    """(name, first start) of each top range name with a kernel launched (or a traced whole graph
    replayed) by a call made inside one of its ranges on the call's thread, in order of first start."""
    launched = "SELECT correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_KERNEL"
    if graph_trace:
        launched += " UNION SELECT correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
    return f"""
SELECT t.name, min(t.start) AS first FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN temp.top_ranges AS t ON t.rowid = (
    SELECT h.rowid FROM temp.top_ranges AS h
    WHERE h.tid = r.globalTid AND h.start <= r.start ORDER BY h.start DESC LIMIT 1)
WHERE t.end >= r.start AND (r.correlationId, r.globalTid >> 24) IN ({launched})
GROUP BY t.name ORDER BY first, t.name
"""
