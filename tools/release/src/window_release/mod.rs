//! `window-release.yaml`, the CronJob that makes maintenance windows act, checked against the
//! policy it drives: the markers and the kinds table of `restage_gate`, and (in
//! [`admission_policy`]) the ValidatingAdmissionPolicy that confines the job's identity,
//! evaluated on the policy's own answers.

mod admission_policy;

use restage_gate::markers::{HELD_LABEL, RELEASE_ANNOTATION, RELEASE_IN_WINDOW};
use restage_gate::workload;
use serde_json::{json, Value};

use crate::kinds;
use crate::repository::{self, root};

pub const FILE: &str = "window-release.yaml";

/// The documents of `window-release.yaml`.
fn documents() -> Vec<Value> {
    let text = repository::read(&root(), FILE).expect("window-release.yaml");
    repository::yaml_documents(FILE, &text).expect("YAML")
}

/// The window job's ClusterRoleBinding, in a file of its own: applied after the admission
/// policy of `window-release.yaml`.
fn binding_document() -> Value {
    let file = kinds::WINDOW_RELEASE_BINDING;
    let text = repository::read(&root(), file).expect("the binding's manifest");
    let mut docs = repository::yaml_documents(file, &text).expect("YAML");
    assert_eq!(docs.len(), 1, "{file}: the ClusterRoleBinding only");
    assert_eq!(docs[0]["kind"], "ClusterRoleBinding", "{file}");
    docs.remove(0)
}

/// The one document of `kind`.
fn document(kind: &str) -> Value {
    let mut found: Vec<Value> = documents()
        .into_iter()
        .filter(|d| d["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "{FILE}: one {kind}");
    found.remove(0)
}

fn job_pod() -> Value {
    document("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"].clone()
}

fn job_container() -> Value {
    let containers = job_pod()["containers"].clone();
    assert_eq!(
        containers.as_array().map(Vec::len),
        Some(1),
        "one container"
    );
    containers[0].clone()
}

/// `system:serviceaccount:NAMESPACE:NAME`, the user name of the job's service account.
fn job_identity() -> String {
    let job = document("CronJob");
    format!(
        "system:serviceaccount:{}:{}",
        job["metadata"]["namespace"].as_str().expect("a namespace"),
        job_pod()["serviceAccountName"]
            .as_str()
            .expect("a service account")
    )
}

/// The resources of the kinds the policy holds, as its rules and RBAC name them.
fn held_resources() -> Vec<&'static str> {
    workload::kinds().map(|w| w.declared().resource).collect()
}

/// The API groups of the held kinds, each with its versions and resources, in the table's order.
fn held_groups() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    let mut out: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for k in workload::kinds().map(|w| w.declared()) {
        if !out.iter().any(|(g, _, _)| *g == k.group) {
            out.push((k.group, Vec::new(), Vec::new()));
        }
        let (_, versions, resources) = out
            .iter_mut()
            .find(|(g, _, _)| *g == k.group)
            .expect("pushed");
        if !versions.contains(&k.version) {
            versions.push(k.version);
        }
        resources.push(k.resource);
    }
    out
}

/// The `kubectl annotate` arguments of a window job over `resources`.
fn annotate_args(resources: &[&str]) -> Value {
    json!([
        "annotate",
        resources.join(","),
        "--all-namespaces",
        "-l",
        format!("{HELD_LABEL}=true"),
        format!("{RELEASE_ANNOTATION}={RELEASE_IN_WINDOW}"),
        "--overwrite",
    ])
}

#[test]
fn the_job_annotates_every_held_workload_of_the_built_in_groups_with_one_kubectl_command() {
    let container = job_container();
    assert_eq!(container["command"], json!(["/bin/kubectl"]));
    let built_in: Vec<&str> = held_groups()
        .into_iter()
        .filter(|(group, _, _)| kinds::served_everywhere(group))
        .flat_map(|(_, _, resources)| resources)
        .collect();
    assert!(!built_in.is_empty(), "a kind of a built-in group");
    assert_eq!(container["args"], annotate_args(&built_in));
}

/// kubectl fails on a resource type the cluster does not serve: the kinds of a group whose CRD
/// may be missing are annotated by a CronJob of their own, in their own manifest, which the
/// chart renders only where the group is served, so a job fails only for its own group. It is the
/// CronJob of window-release.yaml, on the group's resources, run by the same service account,
/// whose role and admission policy name every group.
#[test]
fn each_group_a_cluster_may_not_serve_has_its_own_window_job_in_its_own_manifest() {
    let main = document("CronJob");
    for (group, _, resources) in held_groups() {
        let Some(file) = kinds::window_release_file(group) else {
            continue;
        };
        let text = repository::read(&root(), &file).unwrap_or_else(|e| panic!("{e}"));
        let docs = repository::yaml_documents(&file, &text).expect("YAML");
        assert_eq!(docs.len(), 1, "{file}: its CronJob only");
        let mut job = docs[0].clone();
        assert_eq!(job["kind"], "CronJob", "{file}");
        assert_ne!(job["metadata"]["name"], main["metadata"]["name"], "{file}");
        let args =
            &mut job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(*args, annotate_args(&resources), "{file}");
        *args = main["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
            .clone();
        job["metadata"]["name"] = main["metadata"]["name"].clone();
        assert_eq!(
            job, main,
            "{file}: the CronJob of {FILE} but for its name and resources"
        );
    }
}

/// No manifest of a window job for a group the policy no longer holds, or that every cluster
/// serves.
#[test]
fn every_window_job_manifest_is_for_a_group_of_custom_resources_the_policy_holds() {
    let wanted: Vec<String> = held_groups()
        .into_iter()
        .filter_map(|(group, _, _)| kinds::window_release_file(group))
        .collect();
    let found: Vec<String> = std::fs::read_dir(root())
        .expect("the repository")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("window-release-") && n.ends_with(".yaml"))
        .filter(|n| n != kinds::WINDOW_RELEASE_BINDING)
        .collect();
    for file in &found {
        assert!(
            wanted.contains(file),
            "{file}: no kind of its group is held: run `make kinds`"
        );
    }
}

#[test]
fn the_job_runs_the_official_kubectl_image_pinned_to_a_release() {
    let image = job_container()["image"]
        .as_str()
        .expect("image")
        .to_string();
    let version = image
        .strip_prefix("registry.k8s.io/kubectl:v")
        .unwrap_or_else(|| panic!("{image}: not registry.k8s.io/kubectl:vX.Y.Z"));
    let parts: Vec<&str> = version.split('.').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "{image}: pin a release, vX.Y.Z"
    );
}

#[test]
fn the_job_runs_one_at_a_time_unprivileged_and_bounded() {
    let job = document("CronJob");
    let spec = &job["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Forbid");
    for field in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        assert!(spec[field].is_u64(), "spec.{field}");
    }
    let run = &spec["jobTemplate"]["spec"];
    for field in [
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ] {
        assert!(run[field].is_u64(), "jobTemplate.spec.{field}");
    }
    let pod = job_pod();
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert!(pod["securityContext"]["runAsUser"].as_u64().unwrap_or(0) > 0);
    let container = job_container();
    let context = &container["securityContext"];
    assert_eq!(context["allowPrivilegeEscalation"], false);
    assert_eq!(context["readOnlyRootFilesystem"], true);
    assert_eq!(context["capabilities"]["drop"], json!(["ALL"]));
    for bound in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                container["resources"][bound][resource].is_string(),
                "resources.{bound}.{resource}"
            );
        }
    }
}

#[test]
fn everything_namespaced_lives_in_kubewarden() {
    for doc in documents() {
        let namespace = &doc["metadata"]["namespace"];
        assert!(
            namespace.is_null() || namespace == "kubewarden",
            "{}: {namespace}",
            doc["kind"]
        );
    }
    assert_eq!(
        document("ServiceAccount")["metadata"]["namespace"],
        "kubewarden"
    );
    assert_eq!(document("CronJob")["metadata"]["namespace"], "kubewarden");
}

#[test]
fn the_job_runs_as_the_identity_the_role_binds_and_the_admission_policy_confines() {
    let account = document("ServiceAccount");
    let identity = format!(
        "system:serviceaccount:{}:{}",
        account["metadata"]["namespace"]
            .as_str()
            .expect("namespace"),
        account["metadata"]["name"].as_str().expect("name"),
    );
    assert_eq!(job_identity(), identity);

    let binding = binding_document();
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                "namespace": account["metadata"]["namespace"]}])
    );
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
               "name": document("ClusterRole")["metadata"]["name"]})
    );

    let policy = document("ValidatingAdmissionPolicy");
    let name = account["metadata"]["name"].as_str().expect("name");
    assert_eq!(
        policy["spec"]["matchConditions"],
        json!([{"name": "window-release-job",
                "expression": format!("request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':{name}')")}]),
        "the account's name in every namespace"
    );
    assert_eq!(
        policy["spec"]["validations"][0]["expression"],
        json!(format!("request.userInfo.username == '{identity}'")),
        "the job's own namespace only"
    );
    let policy_binding = document("ValidatingAdmissionPolicyBinding");
    assert_eq!(
        policy_binding["spec"],
        json!({"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]})
    );
}

/// `kubectl annotate -A -l SELECTOR` lists each resource across all namespaces and merge-patches
/// each listed object as listed (it fetches again only objects read from files).
#[test]
fn the_role_grants_exactly_list_and_patch_on_the_held_kinds() {
    let want: Vec<Value> = held_groups()
        .into_iter()
        .map(|(group, _, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": ["list", "patch"]})
        })
        .collect();
    assert_eq!(document("ClusterRole")["rules"], json!(want));
}

#[test]
fn the_admission_policy_matches_every_update_the_job_can_make_and_fails_closed() {
    let policy = document("ValidatingAdmissionPolicy");
    let rules: Vec<Value> = held_groups()
        .into_iter()
        .map(|(group, versions, resources)| {
            json!({"apiGroups": [group], "apiVersions": versions, "resources": resources,
                   "operations": ["UPDATE"]})
        })
        .collect();
    assert_eq!(
        policy["spec"]["matchConstraints"],
        json!({ "resourceRules": rules })
    );
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
}

#[test]
fn the_policy_yaml_holds_the_kinds_the_job_annotates() {
    let text = repository::read(&root(), "policy.yaml").expect("policy.yaml");
    let defer = repository::yaml_documents("policy.yaml", &text)
        .expect("YAML")
        .into_iter()
        .find(|d| d["spec"]["settings"]["mode"] == "defer")
        .expect("the defer policy");
    let rules = &defer["spec"]["rules"];
    let ruled: Vec<&Value> = rules
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["resources"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(json!(ruled), json!(held_resources()), "{rules}");
}

/// The job's permission is bound in a file of its own, applied once the admission policy of
/// `window-release.yaml` is in force: that file binds nothing.
#[test]
fn the_jobs_permission_is_bound_apart_from_its_admission_policy() {
    for doc in documents() {
        assert!(
            doc["kind"] != "ClusterRoleBinding" && doc["kind"] != "RoleBinding",
            "{FILE} binds {}",
            doc["metadata"]["name"]
        );
    }
    assert_eq!(
        binding_document()["roleRef"]["name"],
        document("ClusterRole")["metadata"]["name"]
    );
}
