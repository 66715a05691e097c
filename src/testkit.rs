//! Record builders for the unit tests: one JSONL line each (with its newline), in the compact
//! field order the tests' transcripts use.

fn parent_json(parent: Option<&str>) -> String {
    parent.map_or("null".to_string(), |p| format!("\"{p}\""))
}

/// A user prompt: `{"type":"user","uuid":…,"parentUuid":…,"message":{"role":"user","content":TEXT}}`.
pub fn prompt(uuid: &str, parent: Option<&str>, text: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","parentUuid":{},"message":{{"role":"user","content":"{text}"}}}}"#,
        parent_json(parent)
    ) + "\n"
}

/// An assistant message `msg` whose one block calls tool `name` with id `id` and no input.
pub fn tool_call(uuid: &str, parent: &str, msg: &str, id: &str, name: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}","message":{{"id":"{msg}","role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}]}}}}"#
    ) + "\n"
}

/// A user record answering tool call `id` with the text `content`.
pub fn tool_result(uuid: &str, parent: &str, id: &str, content: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","parentUuid":"{parent}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"{content}"}}]}}}}"#
    ) + "\n"
}

#[test]
fn builders_write_the_lines_tests_spelled_out() {
    assert_eq!(
        prompt("1", None, "hi"),
        concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n"
        )
    );
    assert_eq!(
        tool_call("2", "1", "m", "t", "X"),
        concat!(
            r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t","name":"X","input":{}}]}}"#,
            "\n"
        )
    );
    assert_eq!(
        tool_result("3", "2", "t", "ok"),
        concat!(
            r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#,
            "\n"
        )
    );
}
