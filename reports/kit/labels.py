"""What a reader sees instead of a stored code: Slurm state and size-bucket names and cells, component,
cause and alert-scope labels, and catalog recovery actions (``RESTART_BM`` -> 'Reboot the node')."""

from __future__ import annotations

from gpusre.reports.kit.charts import bucket_colour, state_colour
from gpusre.reports.kit.formatting import (
    MISSING,
)
from gpusre.reports.kit.section import Cell


def state_name(state: str) -> str:
    """'OUT_OF_MEMORY' -> 'Out of memory' for use in sentences."""
    return state.replace("_", " ").capitalize()


def bucket_name(bucket: str) -> str:
    """'1' -> '1-GPU', '2-8' -> '2-8 GPU' for use in sentences."""
    if bucket == "all":
        return "all jobs"
    return "single-GPU" if bucket == "1" else f"{bucket} GPU"


def state_cell(state: str) -> Cell:
    return Cell(state, swatch=state_colour(state))


def bucket_cell(bucket: str) -> Cell:
    return Cell(bucket, swatch=bucket_colour(bucket) if bucket != "all" else None)


#: Catalog / incident component -> the name an SRE uses. Several components may share a label
#: (NVLink and NVSwitch are one fabric to the reader); unknown names are shown as stored.
COMPONENT_LABELS: dict[str, str] = {
    "gpu": "GPU",
    "gpu_compute": "GPU",
    "gpu_memory": "GPU memory",
    "gsp_firmware": "GPU firmware (GSP)",
    "driver": "GPU driver",
    "nvlink": "NVLink/NVSwitch",
    "nvswitch": "NVLink/NVSwitch",
    "sxid": "NVLink/NVSwitch",
    "pcie_bus": "PCIe bus",
    "network": "Network link / NIC",
    "nic": "Network link / NIC",
    "network_switch": "Interconnect switch",
    "interconnect_switch": "Interconnect switch",
    "storage": "Storage",
    "local_disk": "Local disk",
    "host_memory": "Host memory",
    "host_cpu": "Host CPU",
    "host_power": "Node power supply",
    "power": "Power",
    "thermal": "Thermal",
    "os": "Operating system",
    "slurm": "Slurm",
    "user_application": "User application",
    "other": "Other / unclassified",
    "unknown": "Unknown",
    "unknown (suspected)": "Unknown (suspected NODE_FAIL)",
}

CAUSE_LABELS = {"driver_firmware": "driver/firmware"}


def component_label(component: str | None) -> str:
    """'network_switch' -> 'Interconnect switch'; NULL -> 'Unknown'; other text as stored."""
    if component is None or component == "":
        return COMPONENT_LABELS["unknown"]
    return COMPONENT_LABELS.get(component, component)


def cause_label(cause: str | None) -> str:
    return MISSING if not cause else CAUSE_LABELS.get(cause, cause.replace("_", " "))

SCOPE_LABELS = {"node": "node", "rack": "rack", "leaf_switch": "leaf switch", "storage": "storage",
                 "cluster": "cluster"}


def scope_label(scope: str | None) -> str:
    """'leaf_switch' -> 'leaf switch'; an alert incident on no Slurm node says so ('service' -> 'service
    (no node)', 'fabric' -> 'fabric (no node)'), 'cluster' is several racks, 'nodes' several nodes of
    unknown racks; other scopes as stored."""
    words = {"service": "service (no node)", "fabric": "fabric (no node)", "cluster": "cluster (several racks)",
             "nodes": "several nodes (spread unknown)"}
    return MISSING if not scope else words.get(scope) or SCOPE_LABELS.get(scope, scope)


#: Catalog recovery actions (NVIDIA's Xid / SXid resolution buckets, cluster log patterns) -> what an
#: SRE reads in a report. A test checks every action of the catalogs has a label.
ACTION_LABELS: dict[str, str] = {
    "CHECK_BMC": "Check the node's BMC event log (SEL) and the part its drain reason names",
    "CHECK_CATALOG": "Look the code up in NVIDIA's documentation and add it to the catalog",
    "CHECK_LINK": "Check the network link",
    "CHECK_MECHANICALS": "Check fans and mechanicals",
    "CHECK_STORAGE": "Check the storage",
    "CHECK_THERMALS": "Check cooling and temperatures",
    "CHECK_UVM": "Check unified memory (UVM)",
    "CONTACT_SUPPORT": "Contact the vendor's support",
    "DRAIN_NODE": "Drain the node",
    "IGNORE": "No action needed",
    "MONITOR": "Monitor",
    "RESET_FABRIC": "Reset the NVLink fabric",
    "RESET_GPU": "Reset the GPU",
    "RESTART_APP": "Restart the application",
    "RESTART_BM": "Reboot the node",
    "RESTART_FM": "Restart the NVLink fabric service (nvidia-fabricmanager / nvidia-imex)",
    "RESTART_VM": "Restart the VM",
    "UPDATE_SWFW": "Update driver / firmware",
    "WORKFLOW_NVLINK5_ERR": "Follow the NVLink 5 error workflow",
    "WORKFLOW_NVLINK_ERR": "Follow the NVLink error workflow",
    "WORKFLOW_XID_45": "Follow the Xid 45 workflow",
    "WORKFLOW_XID_48": "Follow the Xid 48 (double-bit ECC) workflow",
    "XID_154": "Follow the Xid 154 recovery action",
}


def action_label(action: str | None) -> str:
    """'RESTART_BM' -> 'Reboot the node'; several actions ('drain, RMA') and unknown text as stored."""
    if not action:
        return MISSING
    return ACTION_LABELS.get(action, action.replace("_", " ").capitalize() if action.isupper() else action)


# -- a hardware incident by its spread (marts.hw_incidents.scope) ---------------------------------------
# A rack-scope incident is power or cooling failing on several nodes of one rack at once (the rack_wide classes of
# catalog/component_classes.csv), or NVLink failing on several hosts of one cluster.yaml NVLink domain (its
# nvlink_domain_wide classes: a GB200 NVL72 rack, the two racks of an NVL36x2); a leaf-switch one is the links
# of the nodes under one switch, a fabric-scope one link losses under several leaf switches. Their component (a
# node's PSU, a node's NVLink, the switch) names the evidence, not the box to check: the catalog's per-node
# action ("Drain the node", "Check the network link") would send the SRE to the wrong one. One definition, used
# by the incident retrospective, the nightly and the SLO review.

_RACK_COMPONENTS = {"host_power": "Rack power", "power": "Rack power", "thermal": "Rack cooling",
                    "nvlink": "NVLink domain", "nvswitch": "NVLink domain", "sxid": "NVLink domain"}
_RACK_KINDS = {"Rack power": "Rack power loss", "Rack cooling": "Rack cooling failure",
               "NVLink domain": "NVLink domain failure"}
_RACK_ACTIONS = {"Rack power": "Check the rack's PDU / breaker and power feed (not one node's power supply)",
                 "Rack cooling": "Check the rack's cooling (CDU, fans, airflow), not one node",
                 "NVLink domain": "Check the NVLink domain's NVSwitch trays and Fabric Manager, not one compute tray"}
FABRIC_COMPONENT = "Fabric (upstream switch)"
FABRIC_ACTION = "Check the spine / core switches and the subnet manager above the leaf switches"
#: The nodes under one leaf switch losing their links at once: the switch failed (its power, its firmware, its
#: uplinks), not each node's cable or HCA.
LEAF_SWITCH_ACTION = "Check the leaf switch (power, management state, uplinks), not one node's link"


def incident_component(component: str | None, scope: str | None) -> str:
    """What failed, by the incident's spread: ('host_power', 'rack') -> 'Rack power', ('nvswitch', 'rack') ->
    'NVLink domain', (any, 'fabric') ->
    'Fabric (upstream switch)'; node, leaf-switch and other scopes -> :func:`component_label`."""
    if scope == "rack":
        return _RACK_COMPONENTS.get(component or "", f"Rack ({component_label(component)})")
    if scope == "fabric":
        return FABRIC_COMPONENT
    return component_label(component)


def incident_kind(component: str | None, scope: str | None) -> str:
    """A hardware incident in a few words: 'Rack power loss', 'Fabric (upstream switch) outage',
    'Interconnect switch failure' (leaf switch), 'PCIe bus failure' (one node)."""
    what = incident_component(component, scope)
    if scope == "fabric":
        return f"{what} outage"
    return _RACK_KINDS.get(what, f"{what} failure")


def incident_action(action: str | None, component: str | None, scope: str | None) -> str:
    """The recommended action for a hardware incident: the shared part its scope points at (a rack's PDU or
    cooling, an NVLink domain's NVSwitches, the leaf switch, the spine / subnet manager), not the catalog's
    per-node action of its worst event (a rack PDU trip is not 'Drain the node', a switch outage not 'Check the
    network link'); node and other scopes -> :func:`action_label`."""
    if scope == "rack":
        return _RACK_ACTIONS.get(incident_component(component, scope),
                                 "Check what the rack's nodes share (power, cooling, NVLink), not one node")
    if scope == "leaf_switch":
        return LEAF_SWITCH_ACTION
    if scope == "fabric":
        return FABRIC_ACTION
    return action_label(action)
