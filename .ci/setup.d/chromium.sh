# Headless Chromium for the dashboard's browser tests (api/dashboard,
# e2e TestDashboardContainers), driven with chromedp. Debian's package;
# the tests find `chromium` in PATH and fail under CI=true without it.
if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi
export LEVEE_TEST_CHROMIUM="$(command -v chromium)"
