use d1_retry::d1_retry;

trait UserRepo {
    #[d1_retry]
    async fn find(&self, id: i64) -> Result<Option<i64>, String>;
}

fn main() {}
