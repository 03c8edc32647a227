//! The dashboard's pages, drawn on the server from [`super::model`]: plain HTML with inline SVG,
//! usable without script.
