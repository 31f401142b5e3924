//! The metrics client (upstream `metrics/client.go`): resource metrics from
//! `metrics.k8s.io/v1beta1` PodMetrics, pod and object metrics from
//! `custom.metrics.k8s.io/v1beta2`, external metrics from `external.metrics.k8s.io/v1beta1`.
//! A cluster that does not serve an API answers 404, which becomes the metric's
//! `FailedGet...Metric` condition as upstream.

use std::time::Duration;

use apimachinery::quantity;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::replica_calculator::{go_zero_time, PodMetric, PodMetricsInfo};

/// Where the metrics come from; the controller's tests fake it.
pub trait MetricsClient: Send + Sync {
    /// Upstream `GetResourceMetric`: per pod, the sum of the containers' usage of
    /// `resource` (or the named container's), with the first item's timestamp.
    fn resource_metric(
        &self,
        resource: &str,
        namespace: &str,
        selector: &str,
        container: Option<&str>,
    ) -> impl std::future::Future<Output = Result<(PodMetricsInfo, Timestamp), String>> + Send;

    /// Upstream `GetRawMetric`: a custom metric of the selected pods.
    fn raw_metric(
        &self,
        name: &str,
        namespace: &str,
        selector: &str,
        metric_selector: &str,
    ) -> impl std::future::Future<Output = Result<(PodMetricsInfo, Timestamp), String>> + Send;

    /// Upstream `GetObjectMetric`: a custom metric of one object, addressed by its
    /// resource (`deployments.apps`) and name.
    fn object_metric(
        &self,
        name: &str,
        namespace: &str,
        group_resource: &str,
        object: &str,
        metric_selector: &str,
    ) -> impl std::future::Future<Output = Result<(i64, Timestamp), String>> + Send;

    /// Upstream `GetExternalMetric`: the values of every series matching the selector.
    fn external_metric(
        &self,
        name: &str,
        namespace: &str,
        selector: &str,
    ) -> impl std::future::Future<Output = Result<(Vec<i64>, Timestamp), String>> + Send;
}

/// The client that asks the API server (or the aggregated metrics APIs behind it).
#[derive(Clone)]
pub struct RestMetricsClient {
    /// The API client.
    pub client: kube::Client,
}

fn milli(v: &Value) -> Option<i64> {
    quantity::from_json(v).map(|q| q.milli_value() as i64)
}

fn time(v: &Value) -> Timestamp {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(go_zero_time)
}

/// A Go duration string (`"15.123s"`, `"1m0s"`) as a [`Duration`].
fn go_duration(v: &Value) -> Option<Duration> {
    let s = v.as_str()?;
    apimachinery::duration::parse_std(s).ok()
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

async fn get(client: &kube::Client, path: String) -> Result<Value, String> {
    let mut req = kube::core::Request::new("/")
        .list(&kube::api::ListParams::default())
        .map_err(|e| e.to_string())?;
    *req.uri_mut() = path.parse().map_err(|e| format!("{e}"))?;
    client.request::<Value>(req).await.map_err(|e| match e {
        kube::Error::Api(s) => s.message,
        e => e.to_string(),
    })
}

/// Upstream `getPodMetrics` / `getContainerMetrics` over PodMetrics items.
pub fn pod_metrics_from_items(
    items: &[Value],
    resource: &str,
    container: Option<&str>,
) -> Result<PodMetricsInfo, String> {
    let mut out = PodMetricsInfo::new();
    for m in items {
        let name = m["metadata"]["name"].as_str().unwrap_or_default();
        let timestamp = time(&m["timestamp"]);
        let window = go_duration(&m["window"]).unwrap_or_default();
        let containers = m["containers"].as_array().cloned().unwrap_or_default();
        match container {
            Some(c) => {
                let Some(found) = containers.iter().find(|x| x["name"] == c) else {
                    let ns = m["metadata"]["namespace"].as_str().unwrap_or_default();
                    return Err(format!(
                        "container {c} not present in metrics for pod {ns}/{name}"
                    ));
                };
                if let Some(v) = milli(&found["usage"][resource]) {
                    out.insert(
                        name.to_string(),
                        PodMetric {
                            value: v,
                            timestamp,
                            window,
                        },
                    );
                }
            }
            None => {
                let mut sum = 0i64;
                let mut missing = containers.is_empty();
                for c in &containers {
                    match milli(&c["usage"][resource]) {
                        Some(v) => sum += v,
                        None => {
                            missing = true;
                            break;
                        }
                    }
                }
                if !missing {
                    out.insert(
                        name.to_string(),
                        PodMetric {
                            value: sum,
                            timestamp,
                            window,
                        },
                    );
                }
            }
        }
    }
    Ok(out)
}

impl MetricsClient for RestMetricsClient {
    async fn resource_metric(
        &self,
        resource: &str,
        namespace: &str,
        selector: &str,
        container: Option<&str>,
    ) -> Result<(PodMetricsInfo, Timestamp), String> {
        let path = format!(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods?labelSelector={}",
            encode(selector)
        );
        let list = get(&self.client, path)
            .await
            .map_err(|e| format!("unable to fetch metrics from resource metrics API: {e}"))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Err("no metrics returned from resource metrics API".into());
        }
        let metrics = pod_metrics_from_items(&items, resource, container)
            .map_err(|e| format!("failed to get container metrics: {e}"))?;
        Ok((metrics, time(&items[0]["timestamp"])))
    }

    async fn raw_metric(
        &self,
        name: &str,
        namespace: &str,
        selector: &str,
        metric_selector: &str,
    ) -> Result<(PodMetricsInfo, Timestamp), String> {
        let mut path = format!(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/pods/%2A/{}?labelSelector={}",
            encode(name),
            encode(selector)
        );
        if !metric_selector.is_empty() {
            path.push_str(&format!("&metricLabelSelector={}", encode(metric_selector)));
        }
        let list = get(&self.client, path)
            .await
            .map_err(|e| format!("unable to fetch metrics from custom metrics API: {e}"))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Err("no metrics returned from custom metrics API".into());
        }
        let mut out = PodMetricsInfo::new();
        for m in &items {
            let window = m["windowSeconds"]
                .as_i64()
                .map(|s| Duration::from_secs(s.max(0) as u64))
                .unwrap_or(Duration::from_secs(60));
            if let Some(v) = milli(&m["value"]) {
                out.insert(
                    m["describedObject"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    PodMetric {
                        value: v,
                        timestamp: time(&m["timestamp"]),
                        window,
                    },
                );
            }
        }
        Ok((out, time(&items[0]["timestamp"])))
    }

    async fn object_metric(
        &self,
        name: &str,
        namespace: &str,
        group_resource: &str,
        object: &str,
        metric_selector: &str,
    ) -> Result<(i64, Timestamp), String> {
        let base = "/apis/custom.metrics.k8s.io/v1beta2";
        let mut path = if group_resource == "namespaces" {
            format!(
                "{base}/namespaces/{}/metrics/{}",
                encode(object),
                encode(name)
            )
        } else {
            format!(
                "{base}/namespaces/{namespace}/{group_resource}/{}/{}",
                encode(object),
                encode(name)
            )
        };
        if !metric_selector.is_empty() {
            path.push_str(&format!("?metricLabelSelector={}", encode(metric_selector)));
        }
        let list = get(&self.client, path)
            .await
            .map_err(|e| format!("unable to fetch metrics from custom metrics API: {e}"))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let Some(first) = items.first() else {
            return Err("no metrics returned from custom metrics API".into());
        };
        let v = milli(&first["value"]).ok_or("the custom metrics API returned an invalid value")?;
        Ok((v, time(&first["timestamp"])))
    }

    async fn external_metric(
        &self,
        name: &str,
        namespace: &str,
        selector: &str,
    ) -> Result<(Vec<i64>, Timestamp), String> {
        let path = format!(
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{}?labelSelector={}",
            encode(name),
            encode(selector)
        );
        let list = get(&self.client, path)
            .await
            .map_err(|e| format!("unable to fetch metrics from external metrics API: {e}"))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Err("no metrics returned from external metrics API".into());
        }
        let values = items.iter().filter_map(|m| milli(&m["value"])).collect();
        Ok((values, time(&items[0]["timestamp"])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // After upstream metrics/client_test.go: pods sum their containers, a pod whose
    // container lacks the resource is left out, a named container is taken alone.
    #[test]
    fn pod_metrics_sum_and_container() {
        let items = vec![
            json!({"metadata": {"name": "a", "namespace": "ns"}, "timestamp": "2026-01-01T00:00:00Z", "window": "30s",
                   "containers": [{"name": "c1", "usage": {"cpu": "100m"}}, {"name": "c2", "usage": {"cpu": "250000000n"}}]}),
            json!({"metadata": {"name": "b", "namespace": "ns"}, "timestamp": "2026-01-01T00:00:00Z", "window": "30s",
                   "containers": [{"name": "c1", "usage": {"memory": "1Ki"}}, {"name": "c2", "usage": {"cpu": "1"}}]}),
            json!({"metadata": {"name": "c", "namespace": "ns"}, "containers": []}),
        ];
        let all = pod_metrics_from_items(&items, "cpu", None).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all["a"].value, 350);
        assert_eq!(all["a"].window, Duration::from_secs(30));
        let items = &items[..2];
        let c2 = pod_metrics_from_items(items, "cpu", Some("c2")).unwrap();
        assert_eq!((c2["a"].value, c2["b"].value), (250, 1000));
        let err = pod_metrics_from_items(items, "cpu", Some("c3")).unwrap_err();
        assert_eq!(err, "container c3 not present in metrics for pod ns/a");
    }

    #[test]
    fn selectors_are_query_encoded() {
        assert_eq!(
            encode("app=web,tier in (a,b)"),
            "app%3Dweb%2Ctier%20in%20%28a%2Cb%29"
        );
    }
}
