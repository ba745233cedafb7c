use d1_retry::d1_retry;

#[d1_retry]
struct UserRepo;

fn main() {}
