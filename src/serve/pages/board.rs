//! stub
pub fn board(_: &super::super::model::BoardPage, _: &str) -> String {
    String::new()
}
