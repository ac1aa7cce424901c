"""200 queries about nothing LoCoMo's conversations talk about (written for
memstrata: varied topics, several languages), to measure false hits: a search
with nothing relevant should return nothing (``benchmarks.locomo_cv``)."""

from __future__ import annotations

__all__ = ["UNRELATED"]

_ENGLISH = """
How do I configure a Kubernetes pod disruption budget?
What is the time complexity of Dijkstra's algorithm with a Fibonacci heap?
Explain quantum chromodynamics color confinement
zzqx unrelated quantum chromodynamics
Rust borrow checker lifetime elision rules
How to reset the wifi router admin password
Difference between TCP congestion control algorithms Reno and CUBIC
What is the boiling point of liquid nitrogen in kelvin?
Postgres vacuum freeze transaction id wraparound
How does a carburetor float bowl needle valve work?
Torque specification for M12 grade 8.8 bolts
Lambda calculus Church numerals encoding
Capital gains tax treatment of wash sales
How to compile the Linux kernel with a custom config
Photosynthesis Calvin cycle RuBisCO enzyme
Maxwell's equations in differential form
What is a monad transformer in Haskell?
Soil pH requirements for blueberry cultivation
Byzantine fault tolerance in blockchain consensus
Difference between IPv4 and IPv6 header fields
How to calculate the eigenvalues of a 3x3 matrix
Tectonic plate subduction zones and volcanic arcs
Regex lookbehind assertions in JavaScript
What causes aurora borealis geomagnetic storms?
GDPR data processing agreement requirements
Replacing a bicycle bottom bracket bearing
Semiconductor doping with boron and phosphorus
Mitochondrial electron transport chain complexes
How to set up DNSSEC for a domain
Bernoulli's principle and airfoil lift
What is the half-life of carbon-14?
Configure nginx reverse proxy with TLS termination
Gradient descent learning rate schedules
Treaty of Westphalia 1648 consequences
SQL window functions ROW_NUMBER versus RANK
How do lithium-ion batteries degrade over cycles?
Fourier transform of a Gaussian function
Cryptographic hash collision resistance SHA-256
Supply and demand elasticity in microeconomics
Glacier mass balance measurement methods
Docker multi-stage build cache invalidation
Protein folding and chaperone proteins
Hydraulic fracturing groundwater contamination studies
What is the Riemann hypothesis?
Kalman filter state estimation tutorial
Oil change interval for a diesel tractor engine
Structural steel beam deflection formula
Mesopotamian cuneiform clay tablets
Git rebase interactive squash commits
How to prune an apple tree in late winter
Neutron star equation of state
Double-entry bookkeeping journal entries
What does the mitral valve do?
VLAN trunking on a managed switch
Inflation targeting by central banks
Compiler register allocation graph coloring
Basalt columns formation cooling lava
How to descale an espresso machine boiler
Antibiotic resistance horizontal gene transfer
Redis eviction policies allkeys-lru
Orbital mechanics Hohmann transfer orbit
How to repair a leaking faucet cartridge
Zoning variance application procedure
Knitting cable stitch chart reading
The Peloponnesian War causes
Load balancing consistent hashing ring
Sourdough starter hydration ratio percentage
CRISPR Cas9 guide RNA design
Submarine ballast tank operation
Fermat's last theorem proof by Wiles
How to calibrate an oscilloscope probe
Solar panel inverter MPPT efficiency
Medieval feudal manor system serfs
Python asyncio event loop policy
Catalytic converter platinum rhodium
Cost accounting activity-based costing
Wind turbine blade pitch control
Operating system page replacement LRU
Plate heat exchanger fouling
Thermodynamics entropy Carnot cycle efficiency
Concrete curing time compressive strength
Insurance deductible versus premium tradeoff
Elliptic curve Diffie-Hellman key exchange
Hurricane Saffir-Simpson scale categories
How to solder surface-mount resistors
Monetary base and money multiplier
Bayesian prior conjugate beta distribution
The French Revolution reign of terror
Water treatment chlorination contact time
Garbage collection generational hypothesis JVM
Airplane transponder squawk codes
Black-Scholes option pricing formula
Noise-cancelling headphones active feedback loop
Enzyme kinetics Michaelis-Menten constant
Railway signalling interlocking systems
How to file a patent application provisional
Sewing machine bobbin tension adjustment
Spectroscopy absorption lines hydrogen Balmer series
Ammonia synthesis Haber-Bosch process
Microcontroller interrupt service routine latency
Firmware update over the air for IoT devices
How does a nuclear reactor control rod work?
OAuth2 authorization code flow with PKCE
Tax deduction for home office depreciation
Chess opening theory Sicilian Najdorf
"""

_OTHER = """
Wie konfiguriere ich einen Reverse-Proxy mit Nginx?
Was ist die Eigenwertzerlegung einer symmetrischen Matrix?
Steuererklärung Abschreibung für Arbeitszimmer
Wie funktioniert ein Dieselpartikelfilter?
Quantenverschränkung und Bellsche Ungleichung
Heizungsanlage hydraulischer Abgleich Anleitung
Grundbuchamt Eintragung einer Grundschuld
Kernfusion Tokamak Plasmaeinschluss
Wie wechsle ich die Bremsbeläge am Fahrrad?
Datenbank Normalisierung dritte Normalform
Comment configurer un pare-feu iptables ?
La théorie de la relativité restreinte et la dilatation du temps
Déclaration d'impôts sur les plus-values immobilières
Fonctionnement d'une pompe à chaleur air-eau
Algorithme de tri rapide complexité moyenne
Réparation d'une chaudière à condensation
Le traité de Versailles de 1919
Chimie organique réaction de Diels-Alder
Compilation croisée pour processeur ARM
Droit des sociétés assemblée générale extraordinaire
¿Cómo se calcula la derivada parcial de una función?
Configuración de un servidor DNS con BIND
Impuesto sobre el valor añadido en importaciones
Fotosíntesis y el ciclo de Krebs
¿Qué es la programación funcional pura?
Reparación del embrague de un coche manual
Historia de la Guerra de Sucesión Española
Teoría de colas en redes de computadoras
Mantenimiento de un transformador eléctrico
Ley de Ohm y circuitos en paralelo
Come si configura un cluster Kafka?
La meccanica quantistica e il principio di indeterminazione
Dichiarazione dei redditi modello 730 detrazioni
Manutenzione di una caldaia a gas
Algoritmo di Dijkstra per il percorso minimo
Geologia delle Dolomiti formazione
Como configurar um balanceador de carga?
Imposto de renda sobre aplicações financeiras
Mecânica dos fluidos número de Reynolds
Reparo de um motor elétrico trifásico
Hoe configureer ik een VPN-tunnel met WireGuard?
Belastingaangifte hypotheekrenteaftrek
Thermodynamica tweede hoofdwet
Jak skonfigurować serwer pocztowy Postfix?
Podatek dochodowy od osób prawnych stawka
Równania Maxwella w próżni
Как настроить репликацию в PostgreSQL?
Квантовая механика уравнение Шрёдингера
Налоговый вычет за покупку квартиры
Как заменить ремень ГРМ в двигателе?
Теория графов алгоритм Краскала
Строительство фундамента на пучинистых грунтах
Kubernetes クラスタの設定方法
量子コンピュータの誤り訂正
確定申告の医療費控除
光合成の化学反応式
データベースのインデックス設計
地震の震度とマグニチュードの違い
如何配置Linux防火墙
量子力学的薛定谔方程
个人所得税专项附加扣除
混凝土的抗压强度测试
机器学习中的梯度下降算法
Kubernetes klasterini qanday sozlash kerak?
Soliq deklaratsiyasini topshirish tartibi
Kvant fizikasi va elektronlar
Avtomobil dvigatelini ta'mirlash
Linux sunucuda güvenlik duvarı nasıl yapılandırılır?
Vergi beyannamesi kira geliri
Kuantum mekaniği belirsizlik ilkesi
Kombi bakımı nasıl yapılır?
Hur konfigurerar man en DNS-server?
Skattedeklaration avdrag för resor
Kvantfysik och partikelfysik
Kuinka konfiguroida palomuuri Linuxissa?
Verotus ja pääomatulot
Πώς ρυθμίζω έναν διακομιστή ιστού;
Η θεωρία της σχετικότητας του Αϊνστάιν
Jak nakonfigurovat webový server Apache?
Daňové přiznání k dani z příjmů
Hogyan kell beállítani egy tűzfalat?
Cum se configurează un router Cisco?
Як налаштувати сервер баз даних?
Податкова декларація фізичної особи
كيفية إعداد خادم الويب
ميكانيكا الكم ومبدأ عدم اليقين
कंप्यूटर नेटवर्क में राउटिंग प्रोटोकॉल
आयकर रिटर्न कैसे दाखिल करें
리눅스 서버 방화벽 설정 방법
양자역학의 불확정성 원리
Cách cấu hình máy chủ DNS
Thuế thu nhập cá nhân khấu trừ
Jinsi ya kusanidi seva ya wavuti
วิธีตั้งค่าเซิร์ฟเวอร์ฐานข้อมูล
Konfigurasi server web dengan Apache
"""

UNRELATED: tuple[str, ...] = tuple(
    line.strip() for line in (_ENGLISH + _OTHER).splitlines() if line.strip()
)
