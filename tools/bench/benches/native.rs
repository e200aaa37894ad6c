//! Native criterion benches of the same inputs as `evaluate`: reading and comparing two
//! templates (as the policy does), the hold edit and the whole evaluation, without the wasm boundary, to see what
//! the boundary costs.

use criterion::{criterion_group, criterion_main, Criterion};
use restage_gate::clock::UtcTime;
use restage_gate::template::artefacts::ArtefactRules;
use restage_gate::workload;
use restage_gate_e2e::workloads::cases;

fn native(c: &mut Criterion) {
    let rules = ArtefactRules::default();
    let now = UtcTime(1_796_230_266);
    for case in cases() {
        let gvk = &case.payload["request"]["kind"];
        let field = |key: &str| gvk[key].as_str().unwrap_or_default();
        // every case is a workload of a kind the policy holds
        let kind = workload::of(field("group"), field("kind"))
            .unwrap_or_else(|| panic!("{}: not a kind the policy holds: {gvk}", case.name));
        let hold = workload::default_hold(kind, &now.rfc3339(), "+orders-db");
        let payload = serde_json::to_vec(&case.payload).expect("serialisable");
        let (old, new) = (case.old_template.to_string(), case.new_template.to_string());
        c.bench_function(
            &format!("read templates and classify: {}", case.name),
            |b| b.iter(|| restage_gate::compare_templates(&old, &new, &rules)),
        );
        c.bench_function(&format!("floor: {}", case.name), |b| {
            b.iter(|| restage_gate_floor::validate(&payload))
        });
        c.bench_function(&format!("evaluate: {}", case.name), |b| {
            b.iter(|| restage_gate::evaluate(&payload, now))
        });
        c.bench_function(
            &format!("validate (evaluate + encode): {}", case.name),
            |b| b.iter(|| restage_gate::validate(&payload)),
        );
        let object = case.payload["request"]["object"].clone();
        c.bench_function(&format!("hold then release: {}", case.name), |b| {
            b.iter_batched(
                || object.clone(),
                |mut o| {
                    let held = workload::hold(&mut o, kind, &hold);
                    let released = workload::release(&mut o, kind, Some(kind.default_control()));
                    (held, released, o)
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(2))
        .sample_size(30);
    targets = native
}
criterion_main!(benches);
