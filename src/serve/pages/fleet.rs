//! stub
pub fn fleet(_: &super::super::model::Fleet, _: &str) -> String {
    String::new()
}
