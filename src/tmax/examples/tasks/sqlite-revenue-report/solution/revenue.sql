-- Completed-order revenue per customer country and quarter of 2023.
WITH o AS (
    SELECT o.id,
           COALESCE(c.country, 'UNKNOWN') AS country,
           'Q' || ((CAST(substr(o.created_at, 6, 2) AS INTEGER) + 2) / 3) AS quarter
    FROM orders o
    LEFT JOIN customers c ON c.id = o.customer_id
    WHERE lower(o.status) = 'completed'
      AND o.created_at >= '2023-01-01' AND o.created_at < '2024-01-01'
)
SELECT o.country AS country,
       o.quarter AS quarter,
       COUNT(DISTINCT o.id) AS orders,
       printf('%.2f', COALESCE(SUM(i.quantity * i.unit_price_cents), 0) / 100.0) AS revenue
FROM o
LEFT JOIN order_items i ON i.order_id = o.id
GROUP BY o.country, o.quarter
ORDER BY o.country, o.quarter;
