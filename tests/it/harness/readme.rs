//! The README as tests read it: whole, and its fenced blocks of one language, for the tests that
//! run or check what it shows.

pub fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The fenced blocks of `lang` in the README, each as its text.
pub fn blocks(lang: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in readme().lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence == format!("```{lang}") => current = Some(String::new()),
            Some(_) if fence == "```" => found.extend(current.take()),
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    found
}
