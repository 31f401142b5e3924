"""Durability: acknowledged writes survive a SIGKILL of the server."""

import pytest
from kubernetes import client

from conftest import rv_int


@pytest.mark.restart
def test_data_survives_sigkill_restart(fresh_server):
    srv = fresh_server.start()
    api = srv.api_client()
    core = client.CoreV1Api(api)
    ns = "e2e-restart"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    before = {}
    for i in range(20):
        name = f"persist-{i:02d}"
        obj = core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, labels={"batch": "restart"}),
            data={"index": str(i), "payload": "x" * (50 + i)}))
        before[name] = obj
    # one update and one delete, so that not only creates have to be replayed
    upd = core.patch_namespaced_config_map("persist-00", ns, {"data": {"index": "updated"}})
    before["persist-00"] = upd
    core.delete_namespaced_config_map("persist-19", ns)
    del before["persist-19"]
    max_rv = max(rv_int(core.list_namespaced_config_map(ns).metadata.resource_version),
                 *(rv_int(o.metadata.resource_version) for o in before.values()))
    api.close()

    srv.kill9()
    srv.start()

    api = srv.api_client()
    core = client.CoreV1Api(api)
    try:
        assert core.read_namespace(ns).status.phase == "Active"
        after = {o.metadata.name: o for o in
                 core.list_namespaced_config_map(ns, label_selector="batch=restart").items}
        assert sorted(after) == sorted(before)
        for name, old in before.items():
            new = after[name]
            assert new.data == old.data, name
            assert new.metadata.uid == old.metadata.uid, name
            assert new.metadata.resource_version == old.metadata.resource_version, name
            assert new.metadata.creation_timestamp == old.metadata.creation_timestamp, name
        assert after["persist-00"].data["index"] == "updated"

        fresh = core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="after-restart"), data={"a": "b"}))
        assert rv_int(fresh.metadata.resource_version) > max_rv
        listed = core.list_namespaced_config_map(ns)
        assert rv_int(listed.metadata.resource_version) >= rv_int(fresh.metadata.resource_version)
        # a second update of a pre-restart object also moves forward
        upd2 = core.patch_namespaced_config_map("persist-01", ns, {"data": {"index": "again"}})
        assert rv_int(upd2.metadata.resource_version) > rv_int(fresh.metadata.resource_version)
    finally:
        api.close()
