//! The server's `POST /v1/runs` body: any bytes are a run plan or a 400 naming the field.
#![no_main]

use std::sync::{Arc, OnceLock};

use corrigible::Agent;
use corrigible_models::ReplayModel;
use corrigible_server::RunRequest;
use libfuzzer_sys::fuzz_target;

fn agent() -> &'static Agent {
    static AGENT: OnceLock<Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        let model = ReplayModel::from_str(r#"{"text": "{}"}"#).expect("a one-line replay");
        Agent::builder_shared(Arc::new(model))
            .typed_tool(corrigible_tools::Calculator)
            .build()
            .expect("an agent")
    })
}

fuzz_target!(|body: &[u8]| {
    if let Ok(request) = RunRequest::parse(body) {
        let _ = request.validate(agent());
    }
});
