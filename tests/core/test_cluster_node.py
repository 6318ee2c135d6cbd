"""ClusterConfig.node finds a node by name through an index that follows the list's changes."""

from __future__ import annotations

import dataclasses

from minislurm.core.cluster import simple_cluster


def test_a_node_is_found_by_name_after_the_list_changes():
    config = simple_cluster(300)
    names = [n.name for n in config.nodes]
    assert [config.node(n) for n in names] == config.nodes and config.node("gpu999") is None
    config.nodes[7] = dataclasses.replace(config.nodes[7], name="spare07")
    config.nodes.append(dataclasses.replace(config.nodes[0], name="late"))
    del config.nodes[0]
    assert config.node(names[7]) is None and config.node("spare07") is config.nodes[6]
    assert config.node("late") is config.nodes[-1] and config.node(names[0]) is None
    assert config.node(names[1]) is config.nodes[0]
