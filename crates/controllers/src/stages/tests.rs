//! The loader, the selector and delays.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::*;

const ONE: &str = "\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: one
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchLabels: {app: web}
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Running]}
  delay: {durationMilliseconds: 100, jitterDurationMilliseconds: 300}
  next:
    event: {type: Warning, reason: BackOff, message: m}
";

fn stage_with(spec_line: &str) -> String {
    format!("{ONE}{spec_line}\n")
}

#[test]
fn the_default_stages_parse_and_chain_a_pod_to_running() {
    let set = StageSet::defaults(DEFAULT_START_DELAY);
    let names: Vec<&str> = set.stages().iter().map(|s| s.metadata.name.as_str()).collect();
    assert_eq!(names, ["pod-create", "pod-ready", "pod-complete", "pod-delete"]);
    let mut rng = StdRng::seed_from_u64(1);
    let name = |pod: &Value, rng: &mut StdRng| set.choose(pod, rng).map(|i| set.stages()[i].metadata.name.clone());
    let pod = json!({"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Pending"}});
    assert_eq!(name(&pod, &mut rng).as_deref(), Some("pod-create"));
    let i = set.choose(&pod, &mut rng).unwrap();
    let cx = |object| template::Context { object, now: "T", pod_ip: Some("10.244.0.2"), qos_class: "BestEffort" };
    let created = set.stages()[i].spec.next.status_template.as_ref().unwrap().render(&cx(&pod));
    assert_eq!(created["containerStatuses"][0]["state"]["waiting"]["reason"], "ContainerCreating");
    let pending = json!({"metadata": pod["metadata"], "spec": pod["spec"], "status": created});
    assert_eq!(name(&pending, &mut rng).as_deref(), Some("pod-ready"));
    let running = json!({"metadata": pod["metadata"], "spec": pod["spec"], "status": {"phase": "Running",
        "containerStatuses": [{"name": "c"}]}});
    assert_eq!(name(&running, &mut rng), None, "a running pod stays");
    let deleting = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
    assert_eq!(name(&deleting, &mut rng).as_deref(), Some("pod-delete"));
    let held = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x"]}});
    assert_eq!(name(&held, &mut rng), None, "finalizers hold it");
}

#[test]
fn pod_start_delay_scales_the_default_delays() {
    let set = StageSet::defaults(Duration::from_millis(100));
    let ready = set.stages().iter().find(|s| s.metadata.name == "pod-ready").unwrap();
    assert_eq!(ready.spec.delay.duration_milliseconds, Some(100));
    assert_eq!(ready.spec.delay.jitter_duration_milliseconds, Some(150));
}

#[test]
fn an_unknown_field_is_refused_with_its_line_and_the_expected_ones() {
    let error = StageSet::parse("bad.yaml", &stage_with("  delays: {}")).unwrap_err();
    assert!(error.starts_with("bad.yaml:14:3: spec: unknown field `delays`, expected one of"), "{error}");
    assert!(error.contains("`delay`"), "{error}");

    let error = StageSet::parse("bad.yaml", &ONE.replace("durationMilliseconds: 100", "durationMs: 100")).unwrap_err();
    assert!(error.starts_with("bad.yaml:11:"), "{error}");
    assert!(error.contains("unknown field `durationMs`, expected one of `durationMilliseconds`"), "{error}");
}

#[test]
fn malformed_values_name_the_line_and_what_was_expected() {
    let error = |text: String| StageSet::parse("s.yaml", &text).unwrap_err();
    let e = error(ONE.replace("operator: In", "operator: Equals"));
    assert!(e.starts_with("s.yaml:10:"), "{e}");
    assert!(e.contains("unknown variant `Equals`, expected one of `In`, `NotIn`, `Exists`, `DoesNotExist`"), "{e}");
    let e = error(ONE.replace("key: .status.phase", "key: status.phase"));
    assert!(e.starts_with("s.yaml:10:") && e.contains("expected a path starting with `.`"), "{e}");
    let e = error(ONE.replace(", values: [Running]", ""));
    assert!(e.starts_with("s.yaml:10:") && e.contains("expects a non-empty `values`"), "{e}");
    let e = error(ONE.replace("kwok.x-k8s.io/v1alpha1", "kwok.x-k8s.io/v1"));
    assert!(e.starts_with("s.yaml:1:") && e.contains("expected `kwok.x-k8s.io/v1alpha1`"), "{e}");
    let e = error(ONE.replace("durationMilliseconds: 100", "durationMilliseconds: soon"));
    assert!(e.starts_with("s.yaml:11:") && e.contains("invalid type"), "{e}");
    let e = error(ONE.replace("  next:\n    event: {type: Warning, reason: BackOff, message: m}\n", ""));
    assert!(e.contains("missing field `next`"), "{e}");
    let e = error(stage_with("    statusTemplate: |\n      phase: \"{{ Later }}\""));
    assert!(e.starts_with("s.yaml:14:") && e.contains("spec.next.statusTemplate: .phase: {{ Later }}: unknown"), "{e}");
    let e = error(format!("{ONE}---\n{}", ONE.replace("kind: Pod", "kind: Node")));
    assert!(e.contains("resourceRef v1/Node is not run by listwatch"), "{e}");
    let e = error(format!("{ONE}---\n{}", ONE.replace("kind: Pod}", "kind: Pod, extra: 1}")));
    assert!(e.starts_with("s.yaml:20:"), "the line counts from the file's start, not the document's: {e}");
}

#[test]
fn stage_names_are_unique_across_files() {
    let dir = std::env::temp_dir().join(format!("listwatch-stages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("one.yaml");
    std::fs::write(&file, ONE).unwrap();
    let set = StageSet::load(&[Path::new(DEFAULT_NAME), &file], DEFAULT_START_DELAY).unwrap();
    assert_eq!(set.stages().len(), 5);
    let error = StageSet::load(&[&file, &file], DEFAULT_START_DELAY).unwrap_err();
    assert!(error.contains("stage \"one\" is already defined in"), "{error}");
    let error = StageSet::load(&[dir.join("missing.yaml")], DEFAULT_START_DELAY).unwrap_err();
    assert!(error.contains("missing.yaml: "), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn selectors_match_labels_annotations_and_fields() {
    let set = StageSet::parse("one.yaml", ONE).unwrap();
    let stage = &set.stages()[0];
    assert!(matches(stage, &json!({"metadata": {"labels": {"app": "web"}}, "status": {"phase": "Running"}})));
    assert!(!matches(stage, &json!({"metadata": {"labels": {"app": "db"}}, "status": {"phase": "Running"}})));
    assert!(!matches(stage, &json!({"metadata": {"labels": {"app": "web"}}, "status": {"phase": "Pending"}})));
    assert!(!matches(stage, &json!({"metadata": {"labels": {"app": "web"}}})));

    let not_in = StageSet::parse(
        "n.yaml",
        &ONE.replace(
            "{key: .status.phase, operator: In, values: [Running]}",
            "{key: .status.phase, operator: NotIn, values: [Running]}",
        )
        .replace("matchLabels: {app: web}", "matchAnnotations: {a: b}"),
    )
    .unwrap();
    let stage = &not_in.stages()[0];
    assert!(matches(stage, &json!({"metadata": {"annotations": {"a": "b"}}})), "a missing field is not in");
    assert!(!matches(stage, &json!({"metadata": {"annotations": {"a": "b"}}, "status": {"phase": "Running"}})));
    assert!(!matches(stage, &json!({"metadata": {"labels": {"a": "b"}}})), "annotations are not labels");
}

#[test]
fn delays_are_drawn_between_duration_and_jitter() {
    let set = StageSet::parse("one.yaml", ONE).unwrap();
    let stage = &set.stages()[0];
    let mut rng = StdRng::seed_from_u64(7);
    let now = SystemTime::now();
    let delays: Vec<Duration> = (0..200).map(|_| delay_of(stage, &json!({}), now, &mut rng)).collect();
    assert!(delays.iter().all(|d| (100..=300).contains(&(d.as_millis() as u64))), "{delays:?}");
    assert!(delays.iter().any(|d| d.as_millis() < 150) && delays.iter().any(|d| d.as_millis() > 250));

    let from = StageSet::parse(
        "f.yaml",
        &ONE.replace(
            "delay: {durationMilliseconds: 100, jitterDurationMilliseconds: 300}",
            "delay: {durationFrom: {expressionFrom: '.metadata.annotations[\"delay\"]'}, durationMilliseconds: 100}",
        ),
    )
    .unwrap();
    let stage = &from.stages()[0];
    let pod = json!({"metadata": {"annotations": {"delay": "2s"}}});
    assert_eq!(delay_of(stage, &pod, now, &mut rng), Duration::from_secs(2));
    assert_eq!(delay_of(stage, &json!({}), now, &mut rng), Duration::from_millis(100), "absent: the fixed one");
    let later = listwatch_client::rfc3339::format(now + Duration::from_secs(30));
    let pod = json!({"metadata": {"annotations": {"delay": later}}});
    let until = delay_of(stage, &pod, now, &mut rng);
    assert!(until <= Duration::from_secs(30) && until > Duration::from_secs(28), "{until:?}");
}

#[test]
fn the_example_failure_stages_parse_and_cycle_with_the_defaults() {
    for (name, text, reason) in [
        ("crashloop.yaml", include_str!("../../../../examples/stages/crashloop.yaml"), "Error"),
        ("oomkilled.yaml", include_str!("../../../../examples/stages/oomkilled.yaml"), "OOMKilled"),
    ] {
        let mut set = StageSet::defaults(DEFAULT_START_DELAY);
        set.stages.extend(StageSet::parse(name, text).unwrap().stages);
        let label = name.trim_end_matches(".yaml");
        let mut pod = json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u", "labels": {"listwatch.dev/fail": label}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Pending"},
        });
        let mut rng = StdRng::seed_from_u64(3);
        let mut seen = Vec::new();
        for _ in 0..8 {
            let i = set.choose(&pod, &mut rng).unwrap();
            let stage = &set.stages()[i];
            seen.push(stage.metadata.name.clone());
            let cx = template::Context { object: &pod, now: "T", pod_ip: Some("10.244.0.2"), qos_class: "BestEffort" };
            let status = stage.spec.next.status_template.as_ref().unwrap().render(&cx);
            // What the server's strategic merge does with these fields: replace them.
            for (k, v) in status.as_object().unwrap() {
                if k != "conditions" {
                    pod["status"][k] = v.clone();
                }
            }
        }
        let ours = |stage: &str| format!("{label}-{stage}");
        let expected = ["exit", "first-restart", "exit", "backoff", "restart", "exit"].map(ours);
        assert_eq!(seen[..2], ["pod-create", "pod-ready"]);
        assert_eq!(seen[2..], expected);
        let container = &pod["status"]["containerStatuses"][0];
        assert_eq!(container["restartCount"], 2, "{container}");
        assert_eq!(container["state"]["terminated"]["reason"], reason, "{container}");
        assert_eq!(container["lastState"]["terminated"]["reason"], reason, "{container}");
    }
}
