"""Start the dashboard: `streamlit run app.py` (or `aee app`). The router lives in dashboard/app.py."""

from dashboard.app import main

main()
