"""Which Slurm node an alert is about — and which switch, file system or device — from its labels.

The rule (:func:`locate`, and the same rule set-based over a table in :func:`location_sql`):

1. **Candidates**: the values of ``node_labels`` that are present, in that order (default: the
   labels that say which node an alert is about — ``kubernetes_node`` (Kubernetes, e.g. a
   Grafana alert on dcgm-exporter), ``node`` (Slurm and Kubernetes exporters), ``nodename``
   (node_exporter's uname), ``exported_node`` — then where the exporter was scraped,
   ``instance``, then ``hostname``, ``Hostname`` (dcgm-exporter: the node on bare metal, the
   pod's name under Kubernetes), ``host``, ``exported_instance``, and the node lists
   ``nodelist``, ``node_list``, ``hostlist``). Without a node list in cluster.yaml (and without
   Slurm's own node names), an alert that has a target label naming a device of its own (a switch
   label, ``ost``, ``mdt``: :data:`DEVICE_TARGET_LABELS`) takes no node from ``instance`` /
   ``exported_instance``: those name the server that exports the metric (UFM, an OSS), not a
   node — with a node list, such a server is no node anyway.
2. **Normalize** each (:func:`normalize_host`): drop a URL scheme and path
   (``http://gpu001:9100/metrics``), the ``:port`` (``[fe80::1]:9100`` too), lower-case, drop the
   DNS suffix (``gpu001.cluster.local`` → ``gpu001``; IP addresses stay whole), then apply the
   regex rewrites in order, to addresses too (default: BMC names ``gpu001-bmc``, ``gpu001-ipmi``,
   ``bmc-gpu001`` and the names of a node's other interfaces ``gpu001-ib``, ``gpu001-ib0``,
   ``gpu001-eth1``, ``gpu001-hsn0`` → ``gpu001``). An **alias** (cluster.yaml ``node_aliases``, like
   Slurm's ``NodeAddr`` / ``NodeHostname``: an address or another name of a node) that matches the
   name as written (no port, lower-case), without its DNS suffix, or after the rewrites is that
   node: ``10.0.4.8`` → ``dgx-a-r04-n08``.
3. **Node** = the first candidate whose normalized name is a node. With a node list (cluster.yaml
   ``nodes`` as a hostlist), only a known node counts, spelled as the list spells it; without
   one, any name that is not an IP address or ``localhost``. So ``instance="10.0.0.7:9400"``
   with ``Hostname="gpu007"`` (dcgm-exporter behind a Kubernetes service) is ``gpu007``, and
   ``kubernetes_node="gpu210"`` with ``Hostname="nvidia-dcgm-exporter-7x9kq"`` (the pod) is
   ``gpu210``. A candidate in Slurm hostlist syntax (``nodelist="gpu[065-080]"``, ``gpu001,gpu002``)
   is expanded: one node is that node; several make the alert one on all of them — ``node`` stays
   NULL (one column holds one node) and the target is the hostlist of those nodes
   (``gpu[065-080]``, compressed again, only the nodes among its hosts) with the candidate's label
   as ``target_label``; :func:`alert_nodes` expands it again (clustering puts the alert on every
   one of those nodes).
4. **Target** = the first present of ``target_labels`` (switches, file systems, devices), and
   ``target_label`` names it; when there is none and no node was found, the first candidate's
   value as printed — an alert about a host that is not a node keeps that host. A
   ``host_local_labels`` value (default ``device``, ``mountpoint``: a NIC, a disk, a mount) on a
   host that is no node is qualified by that host, ``10.0.0.21/eth0``: ``eth0`` of two hosts are
   two things. A network file system's device (``10.0.9.1@o2ib:/scratch``, ``nfs01:/home``) names
   the file system every client shares and stays as it is.
5. **Annotation fallback**: with a node list, an alert whose labels give no node (nor several) —
   none, an address, or a host that is no node of the list: a service, an exporter, a proxy such as
   ``redfish-exporter.monitoring.svc:9610`` that reports on nodes it is not — and no switch, file
   system or other device of its own (only host-local target labels) takes the node its
   ``summary`` / ``description`` / ``message`` annotations name — a whole word that normalizes
   (step 2, aliases included) to a node of the list — when they name exactly one node (several:
   none). An alert whose labels name a switch, file system or device stays about that (a switch's
   "port to gpu005 down" stays on the switch); one whose annotations name no node keeps its host as
   target. ``core.alerts`` keeps no column saying so: ``node`` is set, ``labels`` show that no
   label named it.

>>> locate({"alertname": "NodeDown", "instance": "gpu001.cluster.local:9100"}, NodeMapping())
AlertLocation(node='gpu001', target=None, target_label=None)
>>> locate({"instance": "gpu001-bmc:9290"}, NodeMapping(), known_nodes=["gpu001"])
AlertLocation(node='gpu001', target=None, target_label=None)
>>> locate({"instance": "leaf07:161", "switch": "leaf07"}, NodeMapping(), known_nodes=["gpu001"])
AlertLocation(node=None, target='leaf07', target_label='switch')
>>> locate({"instance": "10.0.0.21:9100", "device": "eth0"}, NodeMapping(), known_nodes=["gpu001"])
AlertLocation(node=None, target='10.0.0.21/eth0', target_label='device')
>>> locate({"alertname": "SlurmJobNodeFail", "nodelist": "gpu[001-003]"}, NodeMapping())
AlertLocation(node=None, target='gpu[001-003]', target_label='nodelist')
>>> aliased = NodeMapping(aliases={"10.0.0.7": "gpu007"})
>>> locate({"instance": "10.0.0.7:9100", "device": "mlx5_0"}, aliased, known_nodes=["gpu007"])
AlertLocation(node='gpu007', target='mlx5_0', target_label='device')
>>> locate({"alertname": "NHCCheckFailed", "job": "nhc"}, NodeMapping(), known_nodes=["gpu005", "gpu006"],
...        annotations={"summary": "NHC check_nv_healthmon failed on GPU005.cluster.local"})
AlertLocation(node='gpu005', target=None, target_label=None)
>>> locate({"alertname": "A"}, NodeMapping(), known_nodes=["gpu005", "gpu006"],
...        annotations={"summary": "gpu005 and gpu006 disagree"})
AlertLocation(node=None, target=None, target_label=None)
>>> locate({"instance": "redfish-exporter.monitoring.svc:9610"}, NodeMapping(), known_nodes=["gpu005"],
...        annotations={"summary": "PSU1 on gpu005 reports AC lost"})
AlertLocation(node='gpu005', target=None, target_label=None)
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import duckdb
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpusre.models.ingest.hostlist import HostlistError, compress_hostlist, expand_hostlist
from gpusre.models.warehouse import table_exists

__all__ = [
    "slurm_node_names",
    "AlertLocation",
    "DEVICE_TARGET_LABELS",
    "SCRAPE_LABELS",
    "HostMapping",
    "alert_nodes",
    "host_list",
    "node_lists",
    "DEFAULT_HOST_LOCAL_LABELS",
    "DEFAULT_NODE_LABELS",
    "DEFAULT_TARGET_LABELS",
    "NODE_ANNOTATIONS",
    "NodeMapping",
    "annotation_words",
    "annotation_values_sql",
    "NodeRewrite",
    "locate",
    "label_values_sql",
    "location_sql",
    "node_name",
    "host_names",
    "node_names",
    "normalize_host",
]

DEFAULT_NODE_LABELS: tuple[str, ...] = (
    "kubernetes_node", "node", "nodename", "exported_node",
    "instance", "hostname", "Hostname", "host", "exported_instance",
    "nodelist", "node_list", "hostlist",
)
#: Node labels that name where an exporter was scraped, not necessarily what the alert is about.
SCRAPE_LABELS: tuple[str, ...] = ("instance", "exported_instance")
#: Target labels that name a device of its own (a switch, a Lustre OST/MDT): without a node list,
#: the exporter host (:data:`SCRAPE_LABELS`) of such an alert is the server that watches it, no node.
DEVICE_TARGET_LABELS: frozenset[str] = frozenset({"switch", "leaf", "leaf_switch", "spine", "ib_switch", "fabric",
                                                  "ost", "mdt"})
DEFAULT_TARGET_LABELS: tuple[str, ...] = (
    "switch", "leaf", "leaf_switch", "spine", "ib_switch", "fabric",
    "filesystem", "fs", "ost", "mdt", "device", "mountpoint",
)
#: Target labels whose value names a thing on one host (a NIC, a disk, a mount), not fabric-wide.
DEFAULT_HOST_LOCAL_LABELS: tuple[str, ...] = ("device", "mountpoint")
#: Annotations whose text may name the node of an alert whose labels name none (step 5).
NODE_ANNOTATIONS: tuple[str, ...] = ("summary", "description", "message")
#: A word of an annotation that could name a host: letters, digits, ``_ . -`` (a ``:port``, ``/``,
#: ``=`` or space ends it), with a letter in it, or a dotted IPv4 address (a bare number is no host).
#: RE2 and Python agree on both.
_WORD = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_HOST_WORD = r"[A-Za-z]|^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+\.?$"
#: In a host-local label, a network file system's device (``<nid>@o2ib:/<fs>``, ``<server>:/<export>``).
_REMOTE_DEVICE_MARK = ":/"


class NodeRewrite(BaseModel):
    """``re.sub(pattern, replacement, name)`` on a normalized host name (Python regex syntax)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: str
    replacement: str = ""

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    def apply(self, name: str) -> str:
        return re.sub(self.pattern, self.replacement, name)


#: BMC / out-of-band names of a node (``gpu001-bmc``, ``gpu001-ipmi``, ``bmc-gpu001``) and the names
#: of its other interfaces in DNS (``gpu001-ib``, ``gpu001-ib0``, ``gpu001-eth1``, ``gpu001-hsn0``,
#: ``gpu001-ipoib``) → ``gpu001``.
DEFAULT_REWRITES: tuple[NodeRewrite, ...] = (
    NodeRewrite(pattern=r"^(.+?)-(?:bmc|ipmi|ilo|idrac|oob|mgmt|ib\d*|ipoib|eth\d*|hsn\d*|opa\d*)$", replacement=r"\1"),
    NodeRewrite(pattern=r"^(?:bmc|ipmi|ilo|idrac)-(.+)$", replacement=r"\1"),
)


class NodeMapping(BaseModel):
    """How alert labels name nodes and other targets (cluster.yaml ``alerts.nodes``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    node_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_NODE_LABELS), min_length=1)
    target_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_TARGET_LABELS))
    host_local_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_HOST_LOCAL_LABELS))
    strip_domain: bool = True
    rewrites: list[NodeRewrite] = Field(default_factory=lambda: list(DEFAULT_REWRITES))
    #: Other names of nodes (lower-cased alias → node; an address, an old or another interface's
    #: name): cluster.yaml ``node_aliases``, expanded and checked by the config (set it there).
    aliases: dict[str, str] = Field(default_factory=dict)

    @field_validator("aliases")
    @classmethod
    def _lower(cls, value: dict[str, str]) -> dict[str, str]:
        return {k.strip().lower(): v.strip().lower() for k, v in value.items()}


class HostMapping(NamedTuple):
    """How host names in node logs become Slurm node names: the same rules as alerts
    (cluster.yaml ``alerts.nodes``) and the cluster's node list (empty: any host name counts)."""

    mapping: NodeMapping = NodeMapping()
    known_nodes: tuple[str, ...] = ()


class AlertLocation(NamedTuple):
    """Where an alert points: a Slurm node (or None), and a non-node target with its label."""

    node: str | None
    target: str | None
    target_label: str | None


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def normalize_host(value: str, mapping: NodeMapping | None = None) -> str | None:
    """A label value reduced to a host name (step 2 of the rule); None when nothing is left.

    >>> [normalize_host(v) for v in ["gpu001.cluster.local:9100", "GPU002-ipmi", "https://gpu003:443/health",
    ...                              "[fe80::1]:9100", "10.1.2.3:9100", "bmc-gpu004.oob.example.com", "gpu010-ib0"]]
    ['gpu001', 'gpu002', 'gpu003', 'fe80::1', '10.1.2.3', 'gpu004', 'gpu010']

    An alias is its node, and rewrites apply to addresses too:

    >>> aliased = NodeMapping(aliases={"10.0.4.8": "dgx-a-r04-n08", "old-gpu7": "gpu007"})
    >>> [normalize_host(v, aliased) for v in ["10.0.4.8:9100", "OLD-GPU7.example.org", "old-gpu7-bmc", "10.0.4.9"]]
    ['dgx-a-r04-n08', 'gpu007', 'gpu007', '10.0.4.9']
    >>> normalize_host("10.0.4.8", NodeMapping(rewrites=[NodeRewrite(pattern=r"^10\\.0\\.4\\.8$", replacement="gpu008")]))
    'gpu008'
    """
    mapping = mapping or _DEFAULT_MAPPING
    host = value.strip()
    scheme = _SCHEME.match(host)
    if scheme:
        host = host[scheme.end():].split("/", 1)[0]
    host = host.rsplit("@", 1)[-1]  # user@host
    if host.startswith("["):  # [IPv6]:port
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:  # host:port (a bare IPv6 address has several colons)
        host = host.split(":", 1)[0]
    host = host.strip().lower().rstrip(".")
    if not host:
        return None
    aliases = mapping.aliases
    if host in aliases:  # before the address check: an address is the alias an IP relay prints
        return aliases[host]
    if mapping.strip_domain and not _is_ip(host):
        host = host.split(".", 1)[0]
        if host in aliases:
            return aliases[host]
    for rewrite in mapping.rewrites:
        host = rewrite.apply(host)
    return aliases.get(host, host) or None


def annotation_words(annotations: Mapping[str, str | None] | None) -> list[str]:
    """The words of an alert's :data:`NODE_ANNOTATIONS` that could name a host (step 5), distinct, in order.

    >>> annotation_words({"summary": "NHC check_nv_healthmon failed on gpu005.cluster.local:9100 (GPU 3)"})
    ['NHC', 'check_nv_healthmon', 'failed', 'on', 'gpu005.cluster.local', 'GPU']
    """
    if not annotations:
        return []
    text = " ".join(v for k in NODE_ANNOTATIONS if isinstance(v := annotations.get(k), str) and v)
    words = [w for w in re.findall(_WORD, text) if re.search(_HOST_WORD, w)]
    return list(dict.fromkeys(words))


def _known_index(known_nodes: Iterable[str] | None) -> dict[str, str] | None:
    if known_nodes is None:
        return None
    index = {n.lower(): n for n in known_nodes}
    return index or None


#: Characters no Slurm hostlist expression holds (a URL, ``host:port``, ``user@host``, text).
_NOT_HOSTLIST = re.compile(r"[\s:/@=]")


def host_list(value: str) -> list[str] | None:
    """The hosts of a label value in Slurm hostlist syntax (``gpu[065-080]``, ``gpu001,gpu002``),
    or None for a plain name (or anything else).

    >>> host_list("gpu[001-003,010]"), host_list("gpu001"), host_list("gpu001:9100")
    (['gpu001', 'gpu002', 'gpu003', 'gpu010'], None, None)
    """
    text = value.strip()
    if ("[" not in text and "," not in text) or _NOT_HOSTLIST.search(text):
        return None
    try:
        hosts = [h.strip() for h in expand_hostlist(text)]
    except HostlistError:
        return None
    hosts = [h for h in hosts if h]
    return hosts or None


def node_name(value: str, mapping: NodeMapping | None = None,
              known: Mapping[str, str] | None = None) -> str | None:
    """The node a label value names (step 3), or None. ``known`` maps lower-cased known node
    names to their spelling (None: no node list, any host name counts). A hostlist value names a
    node when exactly one node is among its hosts (:func:`node_list` gives several)."""
    hosts = host_list(value)
    if hosts is not None:
        nodes = _nodes_of(hosts, mapping, known)
        return nodes[0] if len(nodes) == 1 else None
    host = normalize_host(value, mapping)
    if host is None or host == "localhost" or _is_ip(host):
        return None
    if known is not None:
        return known.get(host)
    return host


def _nodes_of(hosts: list[str], mapping: NodeMapping | None, known: Mapping[str, str] | None) -> list[str]:
    """The distinct nodes among ``hosts`` (each by :func:`node_name`), in order."""
    out: list[str] = []
    for host in hosts:
        node = node_name(host, mapping, known)
        if node is not None and node not in out:
            out.append(node)
    return out


def node_list(value: str, mapping: NodeMapping | None = None,
              known: Mapping[str, str] | None = None) -> str | None:
    """For a hostlist value naming several nodes, those nodes as a compressed hostlist
    (``gpu[065-080]``); else None (a plain name, or at most one node among its hosts)."""
    hosts = host_list(value)
    if hosts is None:
        return None
    nodes = _nodes_of(hosts, mapping, known)
    return compress_hostlist(nodes) if len(nodes) > 1 else None


def alert_nodes(node: str | None, target: str | None, target_label: str | None,
                node_labels: Iterable[str] = DEFAULT_NODE_LABELS) -> list[str]:
    """The Slurm nodes an alert of ``core.alerts`` is on: its ``node``, else the nodes of a hostlist
    target that came from a node label (an alert on several nodes), else none.

    >>> alert_nodes(None, "gpu[065-067]", "nodelist"), alert_nodes("gpu001", "eth0", "device")
    (['gpu065', 'gpu066', 'gpu067'], ['gpu001'])
    >>> alert_nodes(None, "leaf03", "switch"), alert_nodes(None, "ufm01:9090", "instance")
    ([], [])
    """
    if node is not None:
        return [node]
    if target is None or target_label not in set(node_labels):
        return []
    hosts = host_list(target)
    return hosts if hosts is not None and len(hosts) > 1 else []


def _map_distinct(values: pl.Series, fn: Callable[[str], str | None]) -> pl.Series:
    """``fn`` of every value (nulls stay null), called once per distinct value."""
    distinct = values.cast(pl.String).drop_nulls().unique(maintain_order=True)
    mapped = pl.Series([fn(v) for v in distinct.to_list()], dtype=pl.String)
    return values.cast(pl.String).replace_strict(distinct, mapped, default=None, return_dtype=pl.String)


def node_names(values: pl.Series, mapping: NodeMapping | None = None,
               known_nodes: Iterable[str] | None = None) -> pl.Series:
    """:func:`node_name` of every value (nulls stay null); each distinct value is mapped once."""
    known = _known_index(known_nodes)
    return _map_distinct(values, lambda v: node_name(v, mapping, known))


def node_lists(values: pl.Series, mapping: NodeMapping | None = None,
               known_nodes: Iterable[str] | None = None) -> pl.Series:
    """:func:`node_list` of every value (nulls stay null); each distinct value is mapped once."""
    known = _known_index(known_nodes)
    return _map_distinct(values, lambda v: node_list(v, mapping, known))


def host_names(values: pl.Series, mapping: NodeMapping | None = None) -> pl.Series:
    """:func:`normalize_host` of every value (nulls stay null); each distinct value is mapped once."""
    return _map_distinct(values, lambda v: normalize_host(v, mapping))


def _qualified(value: str, label: str, host: str | None, mapping: NodeMapping) -> str:
    """A host-local target value qualified by its host (``10.0.0.21/eth0``); others unchanged."""
    if host is None or label not in mapping.host_local_labels or _REMOTE_DEVICE_MARK in value:
        return value
    return f"{host}/{value.lstrip('/')}"


def locate(labels: Mapping[str, str], mapping: NodeMapping | None = None,
           known_nodes: Iterable[str] | None = None,
           annotations: Mapping[str, str | None] | None = None) -> AlertLocation:
    """The node and target of one alert's labels (and, for step 5, its annotations): the reference
    form of the rule."""
    mapping = mapping or _DEFAULT_MAPPING
    known = _known_index(known_nodes)
    candidates = [(k, labels[k]) for k in mapping.node_labels if labels.get(k)]
    skip = _scrape_skipped(mapping, known is None, [labels.get(k) for k in mapping.target_labels])
    node = nodes = nodes_label = None
    for k, v in candidates:
        if k in skip:
            continue
        if (node := node_name(v, mapping, known)) is not None:
            break
        if (nodes := node_list(v, mapping, known)) is not None:
            nodes_label = k
            break
    if nodes is not None:
        return AlertLocation(None, nodes, nodes_label)
    if node is None and known is not None and _reads_annotations(labels, mapping):
        named = {n for w in annotation_words(annotations) if (n := node_name(w, mapping, known)) is not None}
        node = named.pop() if len(named) == 1 else None
    for label in mapping.target_labels:
        if labels.get(label):
            host = normalize_host(candidates[0][1], mapping) if node is None and candidates else None
            return AlertLocation(node, _qualified(labels[label], label, host, mapping), label)
    if node is None and candidates:
        return AlertLocation(None, candidates[0][1], candidates[0][0])
    return AlertLocation(node, None, None)


def _reads_annotations(labels: Mapping[str, str], mapping: NodeMapping) -> bool:
    """Whether step 5 may read the annotations of an alert whose labels give no node: it has no
    target of its own (a host-local one aside). Its host labels may name anything that is no node —
    an address, a service, an exporter: such a relay reports on nodes, it is not their subject."""
    return not any(labels.get(k) for k in mapping.target_labels if k not in mapping.host_local_labels)


def _scrape_skipped(mapping: NodeMapping, without_node_list: bool, target_values: list[str | None]) -> frozenset[str]:
    """The node labels that do not name the node of an alert with these target values: the exporter
    host (:data:`SCRAPE_LABELS`) when there is no node list and a device target label is present."""
    if not without_node_list:
        return frozenset()
    present = {k for k, v in zip(mapping.target_labels, target_values) if v}
    if present & (DEVICE_TARGET_LABELS - set(mapping.host_local_labels)):
        return frozenset(SCRAPE_LABELS)
    return frozenset()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _paths(names: list[str]) -> str:
    """A DuckDB list of JSON paths, one per label name (one parse extracts them all)."""
    return "[" + ", ".join(_literal('$."' + n.replace('"', '\\"') + '"') for n in names) + "]"


def _words_sql(annotations: str) -> str:
    """SQL: the :func:`annotation_words` of an ``annotations`` JSON column (distinct; in no order —
    the rule counts nodes, the words' order means nothing to it)."""
    texts = ", ".join(f"{annotations}->>{_literal(k)}" for k in NODE_ANNOTATIONS)
    return (f"coalesce(list_distinct(list_filter(regexp_extract_all(concat_ws(' ', {texts}), {_literal(_WORD)}), "
            f"lambda w: regexp_matches(w, {_literal(_HOST_WORD)}))), []::VARCHAR[])")


def _own_target_sql(mapping: NodeMapping, target_values: str) -> str:
    """SQL: whether an alert has a target label of its own (not host-local): step 5 reads no words then."""
    own = [i + 1 for i, k in enumerate(mapping.target_labels) if k not in mapping.host_local_labels]
    if not own:
        return "false"
    return (f"(len(list_filter(list_select({target_values}, [{', '.join(map(str, own))}]), "
            "lambda x: x IS NOT NULL AND x <> '')) > 0)")


def label_values_sql(mapping: NodeMapping, *, alerts: str, annotations: str | None = "annotations") -> str:
    """SQL: ``(alert_id, node_values, target_values)`` per row of ``alerts(alert_id, labels JSON)``
    — the values of ``node_labels`` and ``target_labels`` in rule order (NULL where absent), each
    list from one parse of the labels. ``node_values`` goes on with the :func:`annotation_words` of
    the ``annotations`` JSON column (None: no such column) of every alert with no target of its
    own, the candidates of step 5: element ``len(node_labels) + 1`` on is one.

    One pass: the words of alerts whose labels do name a node are mapped for nothing. Over many
    alerts, select with ``annotations=None``, map those values, then add the words of the alerts
    still without a node with :func:`annotation_values_sql`."""
    targets = _paths(mapping.target_labels) if mapping.target_labels else "[]::VARCHAR[]"
    node_values = f"json_extract_string(labels, {_paths(mapping.node_labels)})"
    if annotations is None:
        return f"""
SELECT alert_id,
       {node_values} AS node_values,
       json_extract_string(labels, {targets}) AS target_values
FROM {alerts}
"""
    return f"""
SELECT alert_id,
       CASE WHEN NOT {_own_target_sql(mapping, 'target_values')}
            THEN list_concat(label_values, {_words_sql(annotations)})
            ELSE label_values END AS node_values,
       target_values
FROM (SELECT alert_id, {annotations},
             {node_values} AS label_values,
             json_extract_string(labels, {targets}) AS target_values
      FROM {alerts})
"""


def annotation_values_sql(mapping: NodeMapping, *, values: str, alerts: str, names: str,
                          annotations: str = "annotations") -> str:
    """SQL: the rows of ``values`` (:func:`label_values_sql` with ``annotations=None``) with the
    :func:`annotation_words` of ``alerts.annotations`` added to ``node_values`` (step 5's candidates)
    for the alerts whose labels name no node — no value of theirs with a ``node`` or ``nodes`` in
    ``names`` (the mapping of those values, as :func:`location_sql` reads it) — and no target of
    their own. Only those alerts' words need mapping: the fallback's cost stays with the alerts
    that need it."""
    return f"""
WITH labelled AS (
    SELECT DISTINCT c.alert_id
    FROM (SELECT alert_id, unnest(node_values) AS value FROM {values}) AS c
    JOIN {names} AS m ON m.value = c.value
    WHERE m.node IS NOT NULL OR m.nodes IS NOT NULL
)
SELECT v.alert_id,
       CASE WHEN l.alert_id IS NULL AND NOT {_own_target_sql(mapping, 'v.target_values')}
            THEN list_concat(v.node_values, {_words_sql('a.' + annotations)})
            ELSE v.node_values END AS node_values,
       v.target_values
FROM {values} AS v
JOIN {alerts} AS a USING (alert_id)
LEFT JOIN labelled AS l USING (alert_id)
"""


def location_sql(mapping: NodeMapping, *, values: str, names: str, without_node_list: bool = False) -> str:
    """SQL for the rule over a table: one row ``(alert_id, node, target, target_label)`` per row
    of ``values`` (the relation :func:`label_values_sql` selects).

    ``names(value, node, host, nodes)`` must map every distinct candidate value (every non-empty
    element of ``node_values``) to :func:`node_name`, :func:`normalize_host` and :func:`node_list`
    of it; a value missing from it is no node. An
    empty label value counts as absent, as in Prometheus. ``without_node_list``: the node names
    were mapped without a node list (any host name counts; see :data:`DEVICE_TARGET_LABELS`) — then
    the annotation words (step 5) are not read either: any word would be a "node".
    """
    node_label_list = "([" + ", ".join(_literal(k) for k in mapping.node_labels) + "])"
    target_label_list = "([" + ", ".join(_literal(k) for k in mapping.target_labels) + "]::VARCHAR[])"
    host_local_list = "([" + ", ".join(_literal(k) for k in mapping.host_local_labels) + "]::VARCHAR[])"
    device_idx = [i + 1 for i, k in enumerate(mapping.target_labels)
                  if k in DEVICE_TARGET_LABELS and k not in mapping.host_local_labels]
    scrape_idx = [i + 1 for i, k in enumerate(mapping.node_labels) if k in SCRAPE_LABELS]
    if without_node_list and device_idx and scrape_idx:
        skip = (f"(list_contains([{', '.join(map(str, scrape_idx))}], c.rank) AND len(list_filter("
                f"list_select(v.target_values, [{', '.join(map(str, device_idx))}]), lambda x: x IS NOT NULL AND x <> '')) > 0)")
    else:
        skip = "false"
    n_labels = len(mapping.node_labels)
    # Step 5: a node named by exactly one node of the annotation words, only with a node list.
    note = "NULL::VARCHAR" if without_node_list else (
        "CASE WHEN p.hit.nodes IS NULL AND len(p.note_nodes) = 1 THEN p.note_nodes[1] END")
    return f"""
WITH candidates AS (
    SELECT * FROM (
        SELECT alert_id, unnest(node_values) AS value, generate_subscripts(node_values, 1) AS rank
        FROM {values})
    WHERE value IS NOT NULL AND value <> ''
), named AS (
    SELECT c.alert_id, c.value, c.rank, m.node, m.host, m.nodes, {skip} AS skip
    FROM candidates AS c JOIN {values} AS v USING (alert_id)
    LEFT JOIN {names} AS m ON m.value = c.value
), picked AS (
    SELECT alert_id,
           arg_min({{'node': node, 'nodes': nodes, 'rank': rank}}, rank)
               FILTER (WHERE rank <= {n_labels} AND NOT skip AND (node IS NOT NULL OR nodes IS NOT NULL)) AS hit,
           arg_min(value, rank) FILTER (WHERE rank <= {n_labels}) AS first_value,
           arg_min(host, rank) FILTER (WHERE rank <= {n_labels}) AS first_host,
           min(rank) FILTER (WHERE rank <= {n_labels}) AS first_rank,
           list(DISTINCT node) FILTER (WHERE rank > {n_labels} AND node IS NOT NULL) AS note_nodes
    FROM named
    GROUP BY alert_id
), located AS (
    SELECT p.*, coalesce(p.hit.node, {note}) AS node FROM picked AS p
), targets AS (
    SELECT alert_id,
           list_position(list_transform(target_values, lambda x: x IS NOT NULL AND x <> ''), true) AS t
    FROM {values}
)
SELECT v.alert_id, p.node,
       CASE WHEN p.node IS NULL AND p.hit.nodes IS NOT NULL THEN p.hit.nodes
            WHEN t.t IS NOT NULL AND p.node IS NULL AND p.first_host IS NOT NULL
                 AND list_contains({host_local_list}, {target_label_list}[t.t])
                 AND NOT contains(v.target_values[t.t], {_literal(_REMOTE_DEVICE_MARK)})
                 THEN p.first_host || '/' || ltrim(v.target_values[t.t], '/')
            WHEN t.t IS NOT NULL THEN v.target_values[t.t]
            WHEN p.node IS NULL THEN p.first_value END AS target,
       CASE WHEN p.node IS NULL AND p.hit.nodes IS NOT NULL THEN {node_label_list}[p.hit.rank]
            WHEN t.t IS NOT NULL THEN {target_label_list}[t.t]
            WHEN p.node IS NULL THEN {node_label_list}[p.first_rank] END AS target_label
FROM {values} AS v
JOIN targets AS t USING (alert_id)
LEFT JOIN located AS p USING (alert_id)
"""


_DEFAULT_MAPPING = NodeMapping()


def slurm_node_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The nodes Slurm's own records name (jobs' node lists, node-state history): without a node list in
    cluster.yaml, an alert's host is a Slurm node only when Slurm knows it — else an exporter pod, a UFM
    or Lustre server and the controller all became "nodes", and a switch flood split around them.
    Empty without either (an alerts-only landing: any host name counts, as before)."""
    parts = [q for table, q in (("core.jobs", "SELECT DISTINCT unnest(nodes) AS node FROM core.jobs"),
                                ("core.node_states", "SELECT DISTINCT node FROM core.node_states"))
             if table_exists(con, table)]
    if not parts:
        return []
    return [n for (n,) in con.sql(" UNION ".join(parts) + " ORDER BY 1").fetchall() if n]
