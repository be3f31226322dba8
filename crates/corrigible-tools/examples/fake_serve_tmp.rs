use corrigible_tools::fake::{FakeOpenMeteo, FakeOptions};
fn main() {
    let server = FakeOpenMeteo::start(FakeOptions::default()).unwrap();
    println!("{} {}", server.geocoding_url(), server.forecast_url());
    std::thread::sleep(std::time::Duration::from_secs(100000));
}
