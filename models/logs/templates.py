"""Log templates with Drain3: fast (mine distinct messages only) and stable (ids persist).

Every node-log line gets a ``template_id`` so that a failure mode nobody catalogued still shows up
as a new template in the nightly report. The fast path is:

1. canonicalize digits (every digit ``0``, runs cut to 4; one NumPy byte pass) and deduplicate:
   a night of node logs is ~98 % the same few hundred message shapes whose numbers vary, so
   the lines collapse to far fewer distinct canonical forms;
2. mask those with vectorized Polars regexes (:mod:`gpusre.models.logs.masking`) — masking is
   defined on the canonical form, so this is exact, not an approximation;
3. feed Drain3 only those distinct strings, in order of first appearance;
4. map every input row back to its distinct message's cluster id and the cluster's *final*
   template text (a template generalizes as later messages join it, so all members of a cluster
   report the same, final text).

Drain3's tree and clusters are used with a similarity that knows masked values from words
(:class:`_VariableAwareDrain`); with it and the generic masks, one setting beats the published
Drain grouping accuracy on all twelve Loghub-2k logs (``benchmarks/bench_loghub.py``), and
:func:`parsing_accuracy_metrics` measures GA, FGA, PA and FTA as the Loghub-2.0 paper does.

Stability: template ids are Drain3 cluster ids. The miner state (config + clusters) is serialized
to deterministic JSON by :meth:`TemplateMiner.state` and stored in the warehouse; the next night
restores it with :meth:`TemplateMiner.from_state`, which rebuilds Drain3's prefix tree by
re-inserting the clusters in id order. Because Drain3 never moves a cluster in its tree after
creating it and only ever generalizes template tokens to ``<*>``, re-inserting the final templates
in creation order rebuilds the same tree, so a message that fitted cluster 17 last night fits
cluster 17 tonight. No pickle/jsonpickle is involved: the state is plain, reviewable JSON.

Drain3 0.9 caveats handled here: an explicit ``TemplateMinerConfig`` is always built (Drain3 would
otherwise read ``./drain3.ini``); Drain3's own masking is left empty (we mask before); there is no
``max_clusters`` limit, because LRU eviction would recycle ids and break their meaning across
nights. A :class:`TemplateMiner` is not thread-safe (neither is Drain3): use one per process.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import polars as pl
from drain3.drain import Drain, LogCluster
from drain3.template_miner import TemplateMiner as _Drain3Miner
from drain3.template_miner_config import TemplateMinerConfig

from gpusre.models.logs.headers import split_header
from gpusre.models.logs.masking import DEFAULT_NODE_PATTERN, MaskRule, canonical_digits, mask_canonical

__all__ = [
    "STATE_FORMAT",
    "TemplateConfig",
    "TemplateMiner",
    "canonical_forms",
    "distinct_first_seen",
    "message_key",
    "grouping_accuracy",
    "mine_lines",
    "normalize_template",
    "parsing_accuracy_metrics",
]

#: Canonical forms whose masked text a :class:`TemplateMiner` keeps between batches (about
#: 200 bytes each): a few batches' worth of distinct forms, a bounded ~50 MB.
MASK_CACHE_FORMS = 250_000

#: Identifies serialized miner state; bump ``version`` if the JSON layout changes.
STATE_FORMAT = "gpusre.drain3-templates"
STATE_VERSION = 1


def _is_variable(token: str) -> bool:
    """A token that holds a masked value (``<NUM>``, ``blk_<NUM>``, ``<HOST>``) or a wildcard."""
    return "<" in token and ">" in token


class _VariableAwareDrain(Drain):
    """Drain3's prefix tree and clusters with a similarity that knows which tokens are variables.

    Plain Drain3 scores a masked token such as ``<UUID>`` like any word, so two messages that share
    little more than their placeholders look alike; a changed constant word costs no more than a
    changed value; and ``<IP>`` and ``<HOST>`` as first token route to different leaves. Here:

    * positions where the template holds ``<*>``, or where both tokens hold a masked value
      (``blk_<NUM>`` vs ``<NUM>``), are variables: they count neither for nor against similarity;
    * similarity is the share of the remaining (constant) positions that are equal, a differing
      pair of plain words (letters only) weighing ``word_weight`` tokens: a word that changes
      usually names a different event (``spawned``/``destroyed``), while a changing value usually
      carries digits or punctuation and was masked;
    * among equally similar clusters the oldest wins (Drain3 prefers the most wildcards).
      Together with the first point this makes a message seen again land in the cluster it
      joined the first time: every template constant is shared by all its members, so a member
      scores 1.0 against its own cluster however far that generalized, and its cluster is, in
      practice, the oldest that does. That is what lets the fast path feed Drain only distinct
      messages and still equal per-line mining (checked on all twelve Loghub-2k samples and the
      benchmark's million lines; a guarantee would need a memory of every message seen);
    * masked tokens route through the prefix tree like numbers (down the wildcard branch), so
      ``<IP> open ...`` and ``<HOST> open ...`` meet in the same leaf.
    """

    def __init__(self, *, word_weight: float, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.word_weight = word_weight
        #: The message that created each cluster, to print templates with its separators.
        self.examples: dict[int, str] = {}
        delimiters = list(self.extra_delimiters)
        # Tokens as get_content_as_tokens cuts them, with their place in the message; only for
        # one-character delimiters (others print as Drain3 prints them).
        self._token_re = (
            re.compile(rf"[^\s{re.escape(''.join(delimiters))}]+") if all(len(d) == 1 for d in delimiters) else None
        )

    def add_log_message(self, content: str) -> tuple[LogCluster, str]:
        """Drain3's step, also remembering the message that created a cluster."""
        cluster, change = super().add_log_message(content)
        if change == "cluster_created":
            self.examples[cluster.cluster_id] = content
        return cluster, change

    def template_text(self, cluster: LogCluster) -> str:
        """The template as its first message looked, each varying token made ``<*>``.

        Drain3 joins the tokens with spaces, so ``uid=0`` (split on ``=``) reads ``uid <*>`` and
        spacing is lost; here the separators come from the message that created the cluster.
        """
        tokens = cluster.log_template_tokens
        example = self.examples.get(cluster.cluster_id)
        if example is None or self._token_re is None:
            return cluster.get_template()  # type: ignore[no-any-return]
        spans = [m.span() for m in self._token_re.finditer(example)]
        if len(spans) != len(tokens):
            return cluster.get_template()  # type: ignore[no-any-return]
        parts, pos = [], 0
        for (start, end), token in zip(spans, tokens):
            parts += [example[pos:start], token]
            pos = end
        parts.append(example[pos:])
        return "".join(parts).strip()

    @staticmethod
    def has_numbers(s: str) -> bool:  # noqa: D102 - Drain3 hook: which tokens route as wildcards
        return _is_variable(s) or any(ch.isdigit() for ch in s)

    def get_seq_distance(self, seq1: Sequence[str], seq2: Sequence[str], include_params: bool) -> tuple[float, int]:
        """Similarity of template ``seq1`` and message ``seq2`` (same length), and the template's
        wildcard count (Drain3's interface)."""
        same = 0
        differ = 0.0
        params = 0
        free = 0  # template wildcards facing a constant of the message
        for t1, t2 in zip(seq1, seq2):
            if t1 == self.param_str:
                params += 1
                free += not _is_variable(t2)
            elif t1 == t2:
                same += not _is_variable(t1)
            elif _is_variable(t1) and _is_variable(t2):
                continue
            elif t1.isalpha() and t2.isalpha():
                differ += self.word_weight
            else:
                differ += 1
        if same == 0:
            # Nothing constant in common: alike only if nothing differs at all (messages made of
            # values only), else a lone wildcard template would swallow every message its length.
            return (1.0 if differ == 0 and free == 0 else 0.0), params
        return same / (same + differ), params

    def fast_match(
        self, cluster_ids: Sequence[int], tokens: list[str], sim_th: float, include_params: bool
    ) -> LogCluster | None:
        """The most similar cluster, the oldest among equals, if at least ``sim_th`` similar."""
        best: LogCluster | None = None
        best_sim = -1.0
        for cluster_id in sorted(cluster_ids):
            cluster = self.id_to_cluster.get(cluster_id)
            if cluster is None:
                continue
            sim, _ = self.get_seq_distance(cluster.log_template_tokens, tokens, include_params)
            if sim > best_sim:
                best, best_sim = cluster, sim
        return best if best_sim >= sim_th else None


@dataclass(frozen=True, slots=True)
class TemplateConfig:
    """Miner parameters: one setting for every log (chosen on the twelve Loghub-2k samples as a
    whole, never per log; see ``benchmarks/bench_loghub.py``).

    ``sim_th``: share of the constant tokens a message must share with a template to join it (see
    :class:`_VariableAwareDrain`). ``depth``: Drain3 tree depth; the first ``depth - 3`` tokens
    (two by default: a log's first word is often a value or the same for every line) route a
    message to its candidate clusters. ``max_children``: fan-out per tree node before tokens fall
    into a wildcard branch. ``extra_delimiters``: characters split like whitespace (``key=value``
    becomes two tokens, so a changed value costs one token instead of the whole pair; splitting on
    ``:``, ``,`` or brackets as well lowered the mean Loghub GA from 0.93 to 0.84-0.88, because a
    ``host:port`` then has one token more than an IP). ``word_weight``: what a changed plain word
    costs, in tokens. ``node_pattern``: the site's node-name regex, and ``extra_masks``: the
    site's own rules, run before the generic ones (see :func:`~gpusre.models.logs.masking.mask_rules`).
    """

    sim_th: float = 0.65
    depth: int = 5
    max_children: int = 100
    extra_delimiters: tuple[str, ...] = ("=",)
    parametrize_numeric_tokens: bool = True
    node_pattern: str = DEFAULT_NODE_PATTERN
    word_weight: float = 2.0
    extra_masks: tuple[MaskRule, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.sim_th <= 1.0:
            raise ValueError(f"sim_th must be in [0, 1], got {self.sim_th}")
        if self.depth < 3:
            raise ValueError(f"depth must be at least 3 (Drain3 requirement), got {self.depth}")
        if self.max_children < 2:
            raise ValueError(f"max_children must be at least 2, got {self.max_children}")

    def to_drain3(self) -> TemplateMinerConfig:
        """An explicit Drain3 config, so Drain3 never falls back to reading ``./drain3.ini``."""
        cfg = TemplateMinerConfig()
        cfg.drain_sim_th = self.sim_th
        cfg.drain_depth = self.depth
        cfg.drain_max_children = self.max_children
        cfg.drain_max_clusters = None  # LRU eviction would reuse ids: never.
        cfg.drain_extra_delimiters = list(self.extra_delimiters)
        cfg.parametrize_numeric_tokens = self.parametrize_numeric_tokens
        cfg.masking_instructions = []  # masking happens before Drain3, vectorized
        cfg.profiling_enabled = False
        return cfg

    def to_json_dict(self) -> dict[str, object]:
        """JSON-ready form (tuples become lists)."""
        d = asdict(self)
        d["extra_delimiters"] = list(self.extra_delimiters)
        d["extra_masks"] = [[r.name, r.pattern, r.replacement] for r in self.extra_masks]
        return d

    @classmethod
    def from_json_dict(cls, d: dict[str, object]) -> TemplateConfig:
        """Inverse of :meth:`to_json_dict`; unknown keys are an error, not silently dropped."""
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown template config keys: {sorted(unknown)}")
        kwargs = dict(d)
        if "extra_delimiters" in kwargs:
            kwargs["extra_delimiters"] = tuple(kwargs["extra_delimiters"])  # type: ignore[arg-type]
        if "extra_masks" in kwargs:
            kwargs["extra_masks"] = tuple(MaskRule(*r) for r in kwargs["extra_masks"])  # type: ignore[attr-defined]
        return cls(**kwargs)  # type: ignore[arg-type]


def distinct_first_seen(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The distinct values in order of first appearance, and per row the index (UInt32) of its
    value among them, so that ``distinct.gather(inverse)`` equals ``values``.

    Why not ``unique(maintain_order=True)`` plus a join back: both hash every string, and the
    join back (``replace_strict`` with string keys) was the slower half. Here the strings are
    hashed once to 64 bits, and deduplication and the per-row index run on integers. A hash
    collision would merge two different values, so the result is checked against the input
    (one vectorized comparison) and, should that ever fail, recomputed on the strings.
    """
    hashes = values.hash(seed=0)
    first_rows = hashes.is_first_distinct().arg_true()
    index = pl.int_range(len(first_rows), dtype=pl.UInt32, eager=True)
    inverse = hashes.replace_strict(hashes.gather(first_rows), index, return_dtype=pl.UInt32)
    distinct = values.gather(first_rows)
    if not distinct.gather(inverse).eq_missing(values).all():
        distinct = values.unique(maintain_order=True)
        index = pl.int_range(len(distinct), dtype=pl.UInt32, eager=True)
        inverse = values.replace_strict(distinct, index, return_dtype=pl.UInt32)
    return distinct, inverse.cast(pl.UInt32).alias(values.name)


def canonical_forms(messages: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The distinct :func:`~gpusre.models.logs.masking.canonical_digits` forms of ``messages``
    (nulls as empty) in order of first appearance, and per row the index of its form
    (:func:`distinct_first_seen`)."""
    return distinct_first_seen(canonical_digits(messages.cast(pl.String).fill_null("")))


@dataclass
class TemplateMiner:
    """Drain3 with an explicit config, batch assignment and JSON state. Not thread-safe."""

    config: TemplateConfig
    _miner: _Drain3Miner = field(repr=False)
    # Canonical form -> masked text of recent batches (columns key, masked), most recent first.
    # Masking is a pure function of the canonical form and the config, so this only saves work;
    # it is not part of the state, and ids do not depend on it.
    _mask_cache: pl.DataFrame | None = field(default=None, repr=False, compare=False)

    @classmethod
    def new(cls, config: TemplateConfig | None = None) -> TemplateMiner:
        """An empty miner (first night, or ad hoc mining of one file)."""
        config = config or TemplateConfig()
        miner = _Drain3Miner(persistence_handler=None, config=config.to_drain3())
        # Same parameters as the Drain3 instance the wrapper built, with the variable-aware
        # similarity; the wrapper is kept only as the holder of the config.
        miner.drain = _VariableAwareDrain(
            word_weight=config.word_weight,
            depth=config.depth,
            sim_th=config.sim_th,
            max_children=config.max_children,
            max_clusters=None,
            extra_delimiters=config.extra_delimiters,
            parametrize_numeric_tokens=config.parametrize_numeric_tokens,
        )
        return cls(config=config, _miner=miner)

    @property
    def drain(self) -> _VariableAwareDrain:
        """The underlying Drain (a ``drain3.drain.Drain``; for the per-line baseline in benchmarks)."""
        return self._miner.drain  # type: ignore[no-any-return]

    # -- persistence ----------------------------------------------------------------------------

    def state(self) -> bytes:
        """Deterministic JSON of the config and every cluster ``[id, template tokens, size,
        example]`` (the example, the masked message that created the cluster, prints the template;
        states without it load too).

        Same clusters give the same bytes (sorted keys, clusters in id order), so the warehouse
        can tell an unchanged state from a changed one by comparing bytes.
        """
        drain = self._miner.drain
        clusters = [
            [c.cluster_id, list(c.log_template_tokens), c.size, drain.examples.get(c.cluster_id)]
            for c in sorted(drain.id_to_cluster.values(), key=lambda c: c.cluster_id)
        ]
        doc = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "config": self.config.to_json_dict(),
            "clusters_counter": drain.clusters_counter,
            "clusters": clusters,
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_state(cls, state: bytes) -> TemplateMiner:
        """Restore a miner saved by :meth:`state`; cluster ids and routing are preserved.

        The prefix tree is rebuilt by inserting the clusters in id order (their creation order),
        which reproduces the tree Drain3 built: a cluster's routing tokens are the ones it was
        created with, or ``<*>`` where it was routed through a wildcard node anyway.
        """
        try:
            doc = json.loads(state.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"template state is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
            raise ValueError("template state has an unknown format")
        if doc.get("version") != STATE_VERSION:
            raise ValueError(f"template state version {doc.get('version')} is not supported")
        miner = cls.new(TemplateConfig.from_json_dict(doc["config"]))
        drain = miner._miner.drain
        for cluster_id, tokens, size, *example in sorted(doc["clusters"], key=lambda c: c[0]):
            cluster = LogCluster(tokens, int(cluster_id))
            cluster.size = int(size)
            if example and example[0] is not None:
                drain.examples[cluster.cluster_id] = example[0]
            drain.id_to_cluster[cluster.cluster_id] = cluster
            drain.add_seq_to_prefix_tree(drain.root_node, cluster)
        drain.clusters_counter = max(int(doc["clusters_counter"]), max(drain.id_to_cluster, default=0))
        return miner

    # -- mining ---------------------------------------------------------------------------------

    def add_distinct(self, messages: Iterable[str]) -> list[int]:
        """Feed already-masked messages to Drain3, one call each; return their cluster ids."""
        add = self._miner.drain.add_log_message
        return [add(m)[0].cluster_id for m in messages]

    def assign(self, masked: pl.Series) -> pl.DataFrame:
        """Template id and final template text for every row of already-masked messages.

        Only the distinct messages reach Drain3 (in order of first appearance, so the result is a
        deterministic function of the input). Each distinct message keeps the cluster Drain3 put
        it in — exactly what per-line Drain3 would have answered — and every row reports that
        cluster's final template. A null message is treated as the empty message.
        Returns columns ``template_id`` (Int64) and ``template`` (String), one row per input row.
        """
        distinct, inverse = distinct_first_seen(masked.cast(pl.String).fill_null(""))
        per_distinct = self._assign_distinct(distinct)
        return pl.DataFrame([per_distinct["template_id"].gather(inverse), per_distinct["template"].gather(inverse)])

    def _assign_distinct(self, distinct: pl.Series) -> pl.DataFrame:
        """:meth:`assign` of messages that are already distinct (and in first-seen order)."""
        ids = self.add_distinct(distinct.to_list())
        clusters = self._miner.drain.id_to_cluster
        # Final text per cluster id, read after the whole batch so early members see it too.
        texts = {i: self.drain.template_text(clusters[i]) for i in set(ids)}
        return pl.DataFrame(
            {"template_id": ids, "template": [texts[i] for i in ids]},
            schema={"template_id": pl.Int64, "template": pl.String},
        )

    def assign_messages(self, messages: pl.Series) -> pl.DataFrame:
        """Mask and assign raw messages: the fast path, same result as
        ``assign(mask_messages(messages))``.

        Masking is a function of :func:`canonical_digits`, so the lines are deduplicated on that
        canonical form first and the regexes run only on the distinct forms; Drain3 then sees
        the distinct masked messages in order of first appearance, as in :meth:`assign`.
        """
        inverse, assigned = self._assign_canonical(messages)
        return pl.DataFrame([assigned["template_id"].gather(inverse), assigned["template"].gather(inverse)])

    def assign_message_ids(self, messages: pl.Series) -> pl.Series:
        """Only the ``template_id`` column of :meth:`assign_messages` (same ids, same miner
        updates): the ingest stores ids, and building the per-row template text would cost a
        second per-row lookup and a string column it throws away."""
        inverse, assigned = self._assign_canonical(messages)
        return assigned["template_id"].gather(inverse)

    def _assign_canonical(self, messages: pl.Series) -> tuple[pl.Series, pl.DataFrame]:
        """Per row, the index of its distinct canonical form; and :meth:`assign` of those forms
        masked (one row per distinct canonical form)."""
        distinct_keys, inverse = canonical_forms(messages)
        return inverse, self.assign(self._mask_distinct(distinct_keys))

    def _mask_distinct(self, keys: pl.Series) -> pl.Series:
        """``mask_canonical(keys)`` for distinct, non-null canonical forms, masking only the
        forms the recent batches did not already mask.

        Why: the ingest templates a night's logs in batches, and the same message shapes recur
        from batch to batch (on the benchmark's random values, 56 % of one batch's forms were in
        the batch before), while the regexes are the costliest step left after deduplication.
        """
        cache = self._mask_cache
        if cache is None:
            masked = mask_canonical(keys, node_pattern=self.config.node_pattern, extra=self.config.extra_masks)
        else:
            # A miss is a null: masking never turns a (non-null) form into null.
            masked = pl.DataFrame({"key": keys}).join(cache, on="key", how="left", maintain_order="left")["masked"]
            missing = masked.is_null().arg_true()
            if len(missing):
                fresh = mask_canonical(keys.gather(missing), node_pattern=self.config.node_pattern, extra=self.config.extra_masks)
                masked = masked.scatter(missing, fresh)
        current = pl.DataFrame({"key": keys, "masked": masked})
        if cache is not None:
            current = pl.concat([current, cache.join(current, on="key", how="anti")])
        self._mask_cache = current.head(MASK_CACHE_FORMS)
        return masked.alias(keys.name)

    def key_messages(self, messages: pl.Series, forms: tuple[pl.Series, pl.Series] | None = None
                     ) -> tuple[pl.Series, pl.DataFrame]:
        """Mask raw messages without mining: per row its ``message_key`` (Int64, :func:`message_key`
        of the masked text), and the distinct ``(message_key, masked)`` in order of first appearance.

        Why: template ids depend on the order Drain3 sees messages, so parallel parse steps cannot
        assign them; they key each line by its masked text instead, and one serial step mines the
        new keys in landing order (:meth:`mine_keys`). Only the miner's config and mask cache are
        used: the Drain3 state is untouched. ``forms``: :func:`canonical_forms` of ``messages``,
        when the caller has them already."""
        distinct_keys, inverse = forms if forms is not None else canonical_forms(messages)
        masked, masked_inverse = distinct_first_seen(self._mask_distinct(distinct_keys))
        hashed = pl.Series("message_key", [message_key(m) for m in masked.to_list()], dtype=pl.Int64)
        per_row = hashed.gather(masked_inverse).gather(inverse)
        return per_row, pl.DataFrame({"message_key": hashed, "masked": masked.alias("masked")})

    def mine_keys(self, keyed: pl.DataFrame) -> pl.DataFrame:
        """Mine distinct masked messages (columns ``message_key``, ``masked``, in the order to mine
        them); return ``message_key``, ``template_id`` for each. Same Drain3 calls as
        :meth:`assign` on those messages."""
        ids = self.add_distinct(keyed["masked"].to_list())
        return pl.DataFrame({"message_key": keyed["message_key"], "template_id": ids},
                            schema={"message_key": pl.Int64, "template_id": pl.Int64})

    def templates(self) -> pl.DataFrame:
        """Every cluster known to the miner: ``template_id``, ``template``, ``size`` (by id)."""
        clusters = sorted(self._miner.drain.id_to_cluster.values(), key=lambda c: c.cluster_id)
        return pl.DataFrame(
            {
                "template_id": [c.cluster_id for c in clusters],
                "template": [self.drain.template_text(c) for c in clusters],
                "size": [c.size for c in clusters],
            },
            schema={"template_id": pl.Int64, "template": pl.String, "size": pl.Int64},
        )


def message_key(masked: str) -> int:
    """A stable signed 64-bit key of a masked message (BLAKE2b): the same text gives the same key in
    every process, run and version (Polars' and DuckDB's hashes promise neither)."""
    return int.from_bytes(hashlib.blake2b(masked.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def mine_lines(
    lines: Sequence[str] | pl.Series,
    *,
    config: TemplateConfig | None = None,
    miner: TemplateMiner | None = None,
    split_headers: bool = False,
) -> pl.DataFrame:
    """Mask and mine raw messages: ``line_no`` (1-based), ``template_id``, ``template``.

    Pass ``miner`` to continue from a restored state (nightly run); otherwise a new miner is
    built from ``config``. Passing both is an error, since the miner already carries its config.
    ``split_headers``: the lines are whole log lines of one file (``gpusre templates --format
    raw``); the header they share is learned and set aside
    (:func:`~gpusre.models.logs.headers.split_header`) and only the message is templated, one row
    per line still. Off by default: the ingest parses its headers itself.
    """
    if miner is not None and config is not None:
        raise ValueError("pass either config or miner, not both")
    miner = miner or TemplateMiner.new(config)
    series = lines if isinstance(lines, pl.Series) else pl.Series("message", list(lines), dtype=pl.String)
    if split_headers:
        series = split_header(series)["message"]
    assigned = miner.assign_messages(series)
    line_no = pl.int_range(1, len(series) + 1, dtype=pl.Int64, eager=True).alias("line_no")
    return assigned.insert_column(0, line_no)


def grouping_accuracy(truth: Sequence[object] | pl.Series, predicted: Sequence[object] | pl.Series) -> float:
    """Loghub grouping accuracy (GA): share of messages whose predicted group is exactly right.

    A message is correctly grouped iff the set of messages sharing its predicted group equals the
    set sharing its ground-truth group (Zhu et al., ICSE 2019). Equivalently: its (truth,
    predicted) pair is as large as both its truth group and its predicted group.
    """
    df = pl.DataFrame({"t": pl.Series(truth).cast(pl.String), "p": pl.Series(predicted).cast(pl.String)})
    if df.height == 0:
        raise ValueError("grouping accuracy of an empty sample is undefined")
    sizes = df.with_columns(
        pl.len().over("t").alias("n_t"),
        pl.len().over("p").alias("n_p"),
        pl.len().over("t", "p").alias("n_tp"),
    )
    correct = sizes.filter((pl.col("n_tp") == pl.col("n_t")) & (pl.col("n_tp") == pl.col("n_p"))).height
    return correct / df.height


#: Characters that glue a word to a variable into one token, for :func:`normalize_template`: all but
#: whitespace and the Loghub-2.0 delimiters (``/`` is not one, but a path stays as it is).
_GLUED = r"""[^\s,!;:=|"'\[\](){}.+@#$%&/<>-]"""


def normalize_template(templates: pl.Series) -> pl.Series:
    """Template texts in the form the Loghub-2.0 evaluation compares (Jiang et al. 2024, after
    Khan et al. 2022): every placeholder (``<NUM>``, ``<IP>``, Drain's ``<*>``) is ``<*>``, a word
    glued to one is ``<*>`` (``blk_<*>``), a token of digits only is ``<*>``, whitespace runs are one space, and variables glued together
    (``<*><*>``, ``<*>.<*>``, ``<*>:<*>``) are one ``<*>``.

    Applied to both the predicted and the ground-truth templates before comparing them (PA, FTA).
    """
    out = (
        templates.cast(pl.String)
        .fill_null("")
        .str.replace_all(r"<[A-Z]+>", "<*>")
        # a word glued to a variable is a variable (``blk_<*>``, ``SOCKS<*>``), as in the paper
        .str.replace_all(rf"{_GLUED}*<\*>{_GLUED}*", "<*>")
        .str.replace_all(r"(^|\s)\d+(\s|$)", "${1}<*>${2}")
        .str.replace_all(r"(^|\s)\d+(\s|$)", "${1}<*>${2}")  # again: adjacent matches share a space
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )
    # Collapse glued variables until nothing changes (a run of n needs about log2(n) passes).
    while True:
        collapsed = out.str.replace_all(r"<\*>[.:/@#-]?<\*>", "<*>")
        if collapsed.equals(out):
            return collapsed
        out = collapsed


def parsing_accuracy_metrics(
    truth_group: Sequence[object] | pl.Series,
    truth_template: Sequence[str] | pl.Series,
    predicted_group: Sequence[object] | pl.Series,
    predicted_template: Sequence[str] | pl.Series,
) -> dict[str, float]:
    """The four Loghub-2.0 accuracy metrics of one parsed sample (Jiang et al. 2024):

    * ``GA``: share of lines whose predicted group has exactly the lines of their true group;
    * ``FGA``: F1 of group precision (correct groups / predicted groups) and recall (correct
      groups / true groups), a group being correct iff its line set equals a true group's;
    * ``PA``: share of lines whose predicted template equals their true template, both
      :func:`normalize_template`-ed;
    * ``FTA``: F1 over templates as for FGA, a template being correct iff its group is correct and
      its text equals the true template's.
    """
    df = pl.DataFrame({
        "t": pl.Series(truth_group).cast(pl.String),
        "p": pl.Series(predicted_group).cast(pl.String),
        "tt": normalize_template(pl.Series(truth_template)),
        "pt": normalize_template(pl.Series(predicted_template)),
    })
    if df.height == 0:
        raise ValueError("accuracy of an empty sample is undefined")
    both = pl.len().over("t", "p")
    df = df.with_columns(ok=(both == pl.len().over("t")) & (both == pl.len().over("p")))
    groups = df.group_by("p").agg(
        pl.col("ok").first(),
        # A predicted group's template is its lines' text; the truth's is shared by the group when correct.
        (pl.col("pt").first() == pl.col("tt").first()).alias("same_text"),
    )
    n_pred, n_truth = groups.height, df["t"].n_unique()
    correct_groups = int(groups["ok"].sum())
    correct_templates = int((groups["ok"] & groups["same_text"]).sum())

    def f1(correct: int) -> float:
        precision, recall = correct / n_pred, correct / n_truth
        return 0.0 if correct == 0 else 2 * precision * recall / (precision + recall)

    return {
        "GA": float(df["ok"].mean()),  # type: ignore[arg-type]
        "FGA": f1(correct_groups),
        "PA": float((df["pt"] == df["tt"]).mean()),  # type: ignore[arg-type]
        "FTA": f1(correct_templates),
    }
