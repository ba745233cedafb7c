use d1_retry::d1_retry;

#[d1_retry]
const fn answer() -> Result<u64, String> {
    Ok(42)
}

fn main() {
    let _ = answer;
}
