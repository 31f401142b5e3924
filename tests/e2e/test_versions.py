"""Objects served under two API versions share one storage and are converted per request:
autoscaling/v1 and v2 HorizontalPodAutoscalers, core/v1 and events.k8s.io/v1 Events."""


def test_hpa_v1_and_v2_are_the_same_objects(kubectl, ns):
    kubectl.apply_yaml("apply", {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
    }, "-n", ns)
    v2 = kubectl.json("get", "horizontalpodautoscalers.v2.autoscaling", "h", "-n", ns)
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    # a v2 change is visible through v1
    kubectl("patch", "horizontalpodautoscalers.v2.autoscaling", "h", "-n", ns, "--type=merge",
            "-p", '{"spec":{"maxReplicas":9}}')
    v1 = kubectl.json("get", "horizontalpodautoscalers.v1.autoscaling", "h", "-n", ns)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["maxReplicas"] == 9
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert v1["metadata"]["resourceVersion"] == kubectl.json(
        "get", "horizontalpodautoscalers.v2.autoscaling", "h", "-n", ns)["metadata"]["resourceVersion"]


def test_events_k8s_io_events_are_core_events(kubectl, ns):
    kubectl.apply_yaml("create", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
        "eventTime": "2026-11-29T10:00:00.000000Z", "reportingController": "coxswain/e2e",
        "reportingInstance": "i1", "action": "Testing", "reason": "Tested", "note": "hello",
        "type": "Normal", "regarding": {"kind": "Pod", "name": "p1", "namespace": ns},
    }, "-n", ns)
    core = kubectl.json("get", "events.v1.", "e1", "-n", ns)
    assert core["apiVersion"] == "v1"
    assert core["message"] == "hello"
    assert core["involvedObject"]["name"] == "p1"
    assert core["reportingComponent"] == "coxswain/e2e"
    got = kubectl("get", "events.v1.", "-n", ns, "--field-selector", "involvedObject.name=p1",
                  "-o", "name").stdout.split()
    assert got == ["event/e1"]
