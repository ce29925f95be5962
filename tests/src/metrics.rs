//! Reading a server's Prometheus metrics.

/// The value of a Prometheus counter or gauge line `name` (summed over label sets) at
/// `base_url/metrics`.
pub async fn metric(client: &reqwest::Client, base_url: &str, name: &str) -> f64 {
    let text = client.get(format!("{base_url}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with(name) && matches!(line.as_bytes().get(name.len()), Some(b' ' | b'{')))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
