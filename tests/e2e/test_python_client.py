"""The official Python client: resourceVersion semantics, watch, pagination,
optimistic concurrency, preconditions, set-based selectors, bookmarks."""

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from conftest import api_status, collect_watch, rv_int, summarize


def cm(name, data=None, labels=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels),
                              data=data if data is not None else {"k": name})


def names_of(lst):
    return {i.metadata.name for i in lst.items}


# --------------------------------------------------------------------------- list + resourceVersion

def test_list_resource_version_match(core_v1, ns):
    a = core_v1.create_namespaced_config_map(ns, cm("a"))
    first = core_v1.list_namespaced_config_map(ns)
    list_rv = first.metadata.resource_version
    assert rv_int(list_rv) >= rv_int(a.metadata.resource_version)
    assert "a" in names_of(first)
    core_v1.create_namespaced_config_map(ns, cm("b"))

    newer = core_v1.list_namespaced_config_map(ns, resource_version=list_rv,
                                               resource_version_match="NotOlderThan")
    assert {"a", "b"} <= names_of(newer)
    assert rv_int(newer.metadata.resource_version) > rv_int(list_rv)

    exact = core_v1.list_namespaced_config_map(ns, resource_version=list_rv,
                                               resource_version_match="Exact")
    assert "a" in names_of(exact) and "b" not in names_of(exact), names_of(exact)
    assert exact.metadata.resource_version == list_rv

    any_rv = core_v1.list_namespaced_config_map(ns, resource_version="0")
    assert "a" in names_of(any_rv)

    # resourceVersionMatch without resourceVersion is invalid
    with pytest.raises(ApiException) as ei:
        core_v1.list_namespaced_config_map(ns, resource_version_match="NotOlderThan")
    assert ei.value.status in (400, 422), ei.value
    # an unknown match value is invalid
    with pytest.raises(ApiException) as ei:
        core_v1.list_namespaced_config_map(ns, resource_version=list_rv,
                                           resource_version_match="Sometime")
    assert ei.value.status in (400, 422), ei.value


def test_get_returns_what_was_written(core_v1, ns):
    created = core_v1.create_namespaced_config_map(ns, cm("rw", {"x": "1", "y": "2"}, {"l": "v"}))
    assert created.metadata.namespace == ns
    assert created.metadata.uid
    read = core_v1.read_namespaced_config_map("rw", ns)
    assert read.data == {"x": "1", "y": "2"}
    assert read.metadata.labels == {"l": "v"}
    assert read.metadata.uid == created.metadata.uid
    assert read.metadata.resource_version == created.metadata.resource_version
    with pytest.raises(ApiException) as ei:
        core_v1.read_namespaced_config_map("absent", ns)
    assert ei.value.status == 404
    st = api_status(ei.value)
    assert st.get("kind") == "Status" and st.get("reason") == "NotFound", st
    assert st.get("details", {}).get("name") == "absent", st


def test_list_items_carry_no_type_meta_as_upstream(core_v1, kubectl, ns):
    """kube-apiserver leaves `kind` and `apiVersion` out of a built-in list's items (the
    list's kind names them, kubernetes/kubernetes#3030); a GET and kubectl's output
    (kubectl fills them in) have them."""
    core_v1.create_namespaced_config_map(ns, cm("typed"))
    listed = core_v1.list_namespaced_config_map(ns)
    assert listed.kind == "ConfigMapList" and listed.api_version == "v1"
    item = next(i for i in listed.items if i.metadata.name == "typed")
    assert item.kind is None and item.api_version is None, item
    got = core_v1.read_namespaced_config_map("typed", ns)
    assert got.kind == "ConfigMap" and got.api_version == "v1"
    raw = json.loads(kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/configmaps").stdout)
    assert all("kind" not in i and "apiVersion" not in i for i in raw["items"]), raw["items"]
    shown = kubectl.json("get", "configmaps", "-n", ns)
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in shown["items"])


# --------------------------------------------------------------------------- watch

def test_watch_from_resource_version_in_order(core_v1, ns):
    start_rv = core_v1.list_namespaced_config_map(ns).metadata.resource_version
    c = core_v1.create_namespaced_config_map(ns, cm("w1", {"v": "1"}))
    c.data = {"v": "2"}
    r = core_v1.replace_namespaced_config_map("w1", ns, c)
    core_v1.delete_namespaced_config_map("w1", ns)

    events = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=start_rv,
                           max_events=3, timeout_seconds=5)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"], summarize(events)
    assert all(e["raw_object"]["metadata"]["name"] == "w1" for e in events)
    rvs = [rv_int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs[0] < rvs[1] < rvs[2], rvs
    assert rvs[0] == rv_int(c.metadata.resource_version)
    assert rvs[1] == rv_int(r.metadata.resource_version)
    assert rvs[0] > rv_int(start_rv)
    assert events[0]["raw_object"]["data"] == {"v": "1"}
    assert events[1]["raw_object"]["data"] == {"v": "2"}
    assert events[0]["raw_object"]["kind"] == "ConfigMap"
    assert events[0]["raw_object"]["apiVersion"] == "v1"


def test_watch_resume_from_last_seen_resource_version(core_v1, ns):
    start_rv = core_v1.list_namespaced_config_map(ns).metadata.resource_version
    created = [core_v1.create_namespaced_config_map(ns, cm(f"r{i}")) for i in range(3)]

    first = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=start_rv,
                          max_events=1, timeout_seconds=5)
    assert summarize(first) == [("ADDED", "r0", created[0].metadata.resource_version)]
    last_seen = first[-1]["raw_object"]["metadata"]["resourceVersion"]

    # resume: only what happened after last_seen, then nothing more until the server ends the watch
    rest = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=last_seen,
                         timeout_seconds=2)
    assert summarize(rest) == [("ADDED", "r1", created[1].metadata.resource_version),
                               ("ADDED", "r2", created[2].metadata.resource_version)]

    # resuming from the newest version yields nothing
    none = collect_watch(core_v1.list_namespaced_config_map, ns,
                         resource_version=created[2].metadata.resource_version, timeout_seconds=1)
    assert summarize(none) == []


def test_watch_label_selector_filters_events(core_v1, ns):
    start_rv = core_v1.list_namespaced_config_map(ns).metadata.resource_version
    core_v1.create_namespaced_config_map(ns, cm("in", labels={"pick": "yes"}))
    core_v1.create_namespaced_config_map(ns, cm("out", labels={"pick": "no"}))
    # a label change that moves an object out of the selection is seen as DELETED
    core_v1.patch_namespaced_config_map("in", ns, {"metadata": {"labels": {"pick": "no"}}})
    events = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=start_rv,
                           label_selector="pick=yes", timeout_seconds=2)
    assert [(t, n) for t, n, _ in summarize(events)] == [("ADDED", "in"), ("DELETED", "in")]


def test_watch_too_old_resource_version_is_gone(fresh_server):
    """With a history of 50 events, a watch (or an exact list) from resourceVersion 1
    after 200 writes is refused with 410 Gone / Expired."""
    from kubernetes import client
    fresh_server.start(extra_args=["--watch-history", "50"])
    api = client.CoreV1Api(fresh_server.api_client())
    api.create_namespaced_config_map("default", cm("churn", {"i": "0"}))
    for i in range(1, 201):
        api.patch_namespaced_config_map("churn", "default", {"data": {"i": str(i)}})
    with pytest.raises(ApiException) as watch_err:
        collect_watch(api.list_namespaced_config_map, "default", resource_version="1",
                      max_events=1, timeout_seconds=2)
    assert watch_err.value.status == 410
    assert "too old resource version" in str(watch_err.value)
    with pytest.raises(ApiException) as list_err:
        api.list_namespaced_config_map("default", resource_version="1",
                                       resource_version_match="Exact")
    assert list_err.value.status == 410
    assert api_status(list_err.value).get("reason") == "Expired"
    # a recent resourceVersion still works
    rv = api.list_namespaced_config_map("default").metadata.resource_version
    api.patch_namespaced_config_map("churn", "default", {"data": {"i": "last"}})
    events = collect_watch(api.list_namespaced_config_map, "default", resource_version=rv,
                           max_events=1, timeout_seconds=2)
    assert [e["type"] for e in events] == ["MODIFIED"]


def test_watch_with_bookmarks(core_v1, ns):
    start_rv = core_v1.list_namespaced_config_map(ns).metadata.resource_version
    made = core_v1.create_namespaced_config_map(ns, cm("bm"))
    events = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=start_rv,
                           allow_watch_bookmarks=True, timeout_seconds=3)
    normal = [e for e in events if e["type"] != "BOOKMARK"]
    assert summarize(normal) == [("ADDED", "bm", made.metadata.resource_version)]
    last = rv_int(start_rv)
    for e in events:
        obj = e["raw_object"]
        rv = rv_int(obj["metadata"]["resourceVersion"])
        assert rv >= last, summarize(events)
        last = rv
        if e["type"] == "BOOKMARK":
            assert obj["kind"] == "ConfigMap", obj

    plain = collect_watch(core_v1.list_namespaced_config_map, ns, resource_version=start_rv,
                          timeout_seconds=2)
    assert all(e["type"] != "BOOKMARK" for e in plain), "bookmarks only when asked for"


def test_watch_send_initial_events(core_v1, ns):
    """The streaming-list protocol client-go reflectors use (WatchListClient,
    default on since 1.35): synthetic ADDED events for the current state, then
    a BOOKMARK annotated k8s.io/initial-events-end=true, then live events."""
    a = core_v1.create_namespaced_config_map(ns, cm("init-a"))
    b = core_v1.create_namespaced_config_map(ns, cm("init-b"))
    end = lambda e: (e["type"] == "BOOKMARK" and
                     (e["raw_object"]["metadata"].get("annotations") or {})
                     .get("k8s.io/initial-events-end") == "true")
    events = collect_watch(core_v1.list_namespaced_config_map, ns, send_initial_events=True,
                           resource_version_match="NotOlderThan", allow_watch_bookmarks=True,
                           stop_when=end, timeout_seconds=5)
    assert events and end(events[-1]), summarize(events)
    initial = [e for e in events[:-1] if e["type"] != "BOOKMARK"]
    assert all(e["type"] == "ADDED" for e in initial), summarize(events)
    assert {"init-a", "init-b"} <= {e["raw_object"]["metadata"]["name"] for e in initial}
    assert rv_int(events[-1]["raw_object"]["metadata"]["resourceVersion"]) >= \
        rv_int(b.metadata.resource_version)
    del a


# --------------------------------------------------------------------------- pagination

def test_pagination_covers_all_items_exactly_once(core_v1, ns):
    expected = {f"p-{i:02d}" for i in range(23)}
    for n in sorted(expected):
        core_v1.create_namespaced_config_map(ns, cm(n, labels={"page": "t"}))
    seen, pages, token = [], 0, None
    while True:
        kw = {"_continue": token} if token else {}
        page = core_v1.list_namespaced_config_map(ns, limit=5, label_selector="page=t", **kw)
        pages += 1
        assert len(page.items) <= 5
        seen.extend(i.metadata.name for i in page.items)
        token = page.metadata._continue
        if not token:
            break
        assert pages < 30, "pagination does not terminate"
    assert len(seen) == len(set(seen)), f"duplicates: {seen}"
    assert set(seen) == expected
    assert pages >= 5, "limit=5 over 23 items needs at least 5 pages"


def test_pagination_is_a_consistent_snapshot(core_v1, ns):
    for i in range(6):
        core_v1.create_namespaced_config_map(ns, cm(f"s-{i}", labels={"snap": "t"}))
    page1 = core_v1.list_namespaced_config_map(ns, limit=3, label_selector="snap=t")
    token = page1.metadata._continue
    assert token
    # writes between pages must not show up in later pages of the same list
    core_v1.create_namespaced_config_map(ns, cm("s-9", labels={"snap": "t"}))
    core_v1.delete_namespaced_config_map("s-5", ns)
    page2 = core_v1.list_namespaced_config_map(ns, limit=3, label_selector="snap=t",
                                               _continue=token)
    names = [i.metadata.name for i in page1.items + page2.items]
    assert sorted(names) == [f"s-{i}" for i in range(6)], names
    assert not page2.metadata._continue
    assert page2.metadata.resource_version == page1.metadata.resource_version


def test_invalid_continue_token(core_v1, ns):
    with pytest.raises(ApiException) as ei:
        core_v1.list_namespaced_config_map(ns, limit=1, _continue="not-a-token")
    assert ei.value.status in (400, 410), ei.value


# --------------------------------------------------------------------------- concurrency

def test_update_with_stale_resource_version_conflicts(core_v1, ns):
    created = core_v1.create_namespaced_config_map(ns, cm("occ", {"v": "1"}))
    stale_rv = created.metadata.resource_version

    fresh = core_v1.read_namespaced_config_map("occ", ns)
    fresh.data = {"v": "2"}
    updated = core_v1.replace_namespaced_config_map("occ", ns, fresh)
    assert rv_int(updated.metadata.resource_version) > rv_int(stale_rv)

    stale = cm("occ", {"v": "3"})
    stale.metadata.resource_version = stale_rv
    with pytest.raises(ApiException) as ei:
        core_v1.replace_namespaced_config_map("occ", ns, stale)
    assert ei.value.status == 409
    st = api_status(ei.value)
    assert st.get("reason") == "Conflict", st
    assert "the object has been modified" in st.get("message", ""), st
    assert core_v1.read_namespaced_config_map("occ", ns).data == {"v": "2"}

    with pytest.raises(ApiException) as ei:
        core_v1.create_namespaced_config_map(ns, cm("occ"))
    assert ei.value.status == 409
    assert api_status(ei.value).get("reason") == "AlreadyExists"

    # a patch carrying a stale resourceVersion conflicts too
    with pytest.raises(ApiException) as ei:
        core_v1.patch_namespaced_config_map(
            "occ", ns, {"metadata": {"resourceVersion": stale_rv}, "data": {"v": "4"}})
    assert ei.value.status == 409
    assert core_v1.read_namespaced_config_map("occ", ns).data == {"v": "2"}

    # replace of something that does not exist is 404
    ghost = cm("ghost")
    ghost.metadata.resource_version = stale_rv
    with pytest.raises(ApiException) as ei:
        core_v1.replace_namespaced_config_map("ghost", ns, ghost)
    assert ei.value.status == 404


def test_delete_with_preconditions(core_v1, ns):
    created = core_v1.create_namespaced_config_map(ns, cm("pre", {"v": "1"}))
    uid, old_rv = created.metadata.uid, created.metadata.resource_version
    now = core_v1.patch_namespaced_config_map("pre", ns, {"data": {"v": "2"}})

    for pre in (client.V1Preconditions(resource_version=old_rv),
                client.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")):
        with pytest.raises(ApiException) as ei:
            core_v1.delete_namespaced_config_map(
                "pre", ns, body=client.V1DeleteOptions(preconditions=pre))
        assert ei.value.status == 409, ei.value
        assert api_status(ei.value).get("reason") == "Conflict"
    assert core_v1.read_namespaced_config_map("pre", ns).metadata.uid == uid

    core_v1.delete_namespaced_config_map("pre", ns, body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=uid, resource_version=now.metadata.resource_version)))
    with pytest.raises(ApiException) as ei:
        core_v1.read_namespaced_config_map("pre", ns)
    assert ei.value.status == 404


# --------------------------------------------------------------------------- selectors

def test_set_based_label_selectors(core_v1, ns):
    objs = {"a": {"env": "prod", "tier": "fe"}, "b": {"env": "dev"},
            "c": {"env": "qa", "tier": "be"}, "d": None}
    for n, labels in objs.items():
        core_v1.create_namespaced_config_map(ns, cm(n, labels=labels))
    mine = set(objs)

    def sel(s):
        return names_of(core_v1.list_namespaced_config_map(ns, label_selector=s)) & mine

    assert sel("env in (prod,dev)") == {"a", "b"}
    assert sel("env notin (prod,dev)") == {"c", "d"}
    assert sel("!tier") == {"b", "d"}
    assert sel("tier") == {"a", "c"}
    assert sel("env,tier notin (be)") == {"a", "b"}
    assert sel("env!=prod") == {"b", "c", "d"}
    assert sel("env=prod,tier=fe") == {"a"}
    assert sel("env==dev") == {"b"}

    with pytest.raises(ApiException) as ei:
        core_v1.list_namespaced_config_map(ns, label_selector="env in (")
    assert ei.value.status == 400


def test_field_selector_on_namespace(core_v1, ns):
    core_v1.create_namespaced_config_map(ns, cm("fs"))
    got = core_v1.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={ns}")
    assert {i.metadata.namespace for i in got.items} == {ns}
    assert "fs" in names_of(got)
    with pytest.raises(ApiException) as ei:
        core_v1.list_namespaced_config_map(ns, field_selector="data.k=x")
    assert ei.value.status == 400


# --------------------------------------------------------------------------- times

def test_times_are_stored_in_utc_as_go_prints_them(api_client, ns):
    """The Python client sends datetimes with their offset and microseconds: a Lease's
    MicroTime comes back in UTC with 6 digits, a condition's Time in UTC to the second,
    as kube-apiserver's metav1 types print them."""
    import datetime
    import json

    tz = datetime.timezone(datetime.timedelta(hours=2))
    when = datetime.datetime(2026, 11, 29, 22, 0, 45, 858494, tzinfo=tz)
    coordination = client.CoordinationV1Api(api_client)
    coordination.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name="l"),
        spec=client.V1LeaseSpec(holder_identity="me", renew_time=when, acquire_time=when)))
    # the raw JSON, not the client's datetime objects
    raw = coordination.read_namespaced_lease("l", ns, _preload_content=False)
    spec = json.loads(raw.data)["spec"]
    assert spec["renewTime"] == "2026-11-29T20:00:45.858494Z", spec
    assert spec["acquireTime"] == "2026-11-29T20:00:45.858494Z", spec

    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(ns, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "d"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="i")])))))
    apps.patch_namespaced_deployment_status("d", ns, {"status": {"conditions": [{
        "type": "Available", "status": "True", "lastUpdateTime": when.isoformat(),
        "lastTransitionTime": when.isoformat()}]}})
    raw = apps.read_namespaced_deployment("d", ns, _preload_content=False)
    cond = json.loads(raw.data)["status"]["conditions"][0]
    assert cond["lastTransitionTime"] == "2026-11-29T20:00:45Z", cond
    assert cond["lastUpdateTime"] == "2026-11-29T20:00:45Z", cond
